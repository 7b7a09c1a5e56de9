package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// builtView is 'scion image build-demo -o json'.
type builtView struct {
	Image  string `json:"image"`
	Binary string `json:"binary"`
}

func newImageCmd(a *app, d Daemons) *cobra.Command {
	c := &cobra.Command{Use: "image", Short: "Build agent images locally (there is no registry)"}
	c.AddCommand(&cobra.Command{
		Use:   "build-demo",
		Short: "Build the demo agent image FROM scratch with this scion binary, through the Docker Engine API",
		Long: `Build scion-demo:latest locally: an image FROM scratch holding only this
(static) scion binary as its entrypoint, a passwd file and the workspace and
home directories. Agents run it with a command such as
"scion agent-demo". Nothing is pulled; DOCKER_HOST picks the engine (a Podman
socket works too).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if d.BuildDemoImage == nil {
				return errNoDaemon
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "building the demo image: sending the scion binary to the Docker Engine")
			stop := slowNote(cmd.ErrOrStderr(), "building the demo image")
			tag, self, err := d.BuildDemoImage(cmd.Context())
			stop()
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), builtView{Image: tag, Binary: self})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Built %s from %s.\n", tag, self)
			return nil
		},
	})
	return c
}
