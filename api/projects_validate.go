package api

// The one check of a project create and of a project update, run by the
// CLI before it sends one and by the Hub before it reads anything.

// CheckSharingMode refuses a sharing mode that is not one of the four.
func CheckSharingMode(field, m string) error {
	if ValidSharingMode(m) {
		return nil
	}
	return BadRequest("invalid %s %s: use %s, %s, %s or %s", field, Quote(m),
		SharingWorktreePerAgent, SharingSharedWorkspace, SharingClonePerAgent, SharingEmptyPerAgent)
}

// checkProjectFields checks the fields a create and an update share (nil:
// not given).
func checkProjectFields(gitRemote, sharingMode, defaultBroker, activeProfile *string) error {
	if gitRemote != nil {
		// Bounded, one line, and an allowed transport; brokers check
		// again, with their own setting for local paths.
		if err := CheckGitRemote(*gitRemote); err != nil {
			return err
		}
	}
	if sharingMode != nil {
		if err := CheckSharingMode("sharingMode", *sharingMode); err != nil {
			return err
		}
	}
	if defaultBroker != nil {
		if err := CheckText("defaultRuntimeBroker", *defaultBroker, MaxRefLen); err != nil {
			return err
		}
	}
	if activeProfile != nil {
		if err := CheckProfile("activeProfile", *activeProfile); err != nil {
			return err
		}
	}
	return nil
}

// WithDefaults gives a project created without a sharing mode the one
// its git remote implies: clone-per-agent with one, empty-per-agent
// without.
func (r *CreateProjectRequest) WithDefaults() {
	if r.SharingMode == "" {
		r.SharingMode = SharingEmptyPerAgent
		if r.GitRemote != "" {
			r.SharingMode = SharingClonePerAgent
		}
	}
}

// Validate is the one check of a CreateProjectRequest on its face ("" is
// the default for every field but the name).
func (r *CreateProjectRequest) Validate() error {
	if err := CheckName("project", r.Name); err != nil {
		return err
	}
	var mode *string
	if r.SharingMode != "" {
		mode = &r.SharingMode
	}
	return checkProjectFields(&r.GitRemote, mode, &r.DefaultBroker, &r.ActiveProfile)
}

// Validate is the one check of an UpdateProjectRequest: each field given
// follows a create's rule ("" clears, except the sharing mode, which a
// project always has).
func (r *UpdateProjectRequest) Validate() error {
	return checkProjectFields(r.GitRemote, r.SharingMode, r.DefaultBroker, r.ActiveProfile)
}

// GlobalProject is the name of the Hub's global project: the project of
// agent commands that name none (no --project, no SCION_PROJECT, no
// agent token's project). It is an ordinary project record on each Hub,
// created by whoever first needs it, but it belongs to no team: a
// broker that serves several Hubs cannot tell one Hub's global project
// from another's by intent, so it refuses its agents
// (CodeGlobalProjectDisabled). Formerly the global grove.
const GlobalProject = "default"
