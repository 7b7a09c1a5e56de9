// Package kubernetes is a runtime.Runtime that runs each agent as a pod,
// through k8s.io/client-go. docs/kubernetes.md is the operator's guide;
// this is the implementer's.
//
// # Objects
//
// Per agent, in the namespace its settings name:
//
//	ConfigMap  scion-<slug>-<hash>   the agent's record: the pod to make at
//	                                 each Start, how the last pod ended
//	Pod        scion-<slug>-<hash>   from Start until Stop or Delete
//	PVCs       <name>-<nonce>-...    its own workspace and home claims
//
// and per project or share, left for the next agent: the shared-workspace
// and worktree base claims, the shared-directory claim, and the claim bound
// to the NFS share's PersistentVolume (nfs_pv_name). Every object carries
// the runtime.SpecLabels that are valid Kubernetes labels (scion.agent_id,
// scion.run_id, scion.broker_id, ...), and the full set in the
// scion.dev/labels annotation; every lookup selects on scion.broker_id,
// so brokers sharing a namespace never see each other's agents.
//
// # Lifecycle
//
// A pod cannot be stopped and started again, hence the record. Create
// validates the pod with a server-side dry run (so admission's refusals,
// such as a missing priority class or sandbox account, are Create's
// errors) and makes the record and claims. Start makes the pod from the
// record (a pending or running pod is left alone: no second launch). Stop
// deletes the pod with the grace period, waits until it is gone and
// records its exit code on the record; the pod's output goes with it. A
// pod that ends by itself is kept, with its output, until the next Start.
// Delete removes pod, own claims and record. Exec and Attach wait for a
// pending pod to run. Suspend and Resume are not supported
// (ErrUnsupported).
//
// States: no pod is created (or exited after a Stop); Pending is pending
// with the reason in Message ("pending: Unschedulable: 0/3 nodes are
// available: ...", "pending: ImagePullBackOff: ..."), so that an agent
// whose pod cannot run never reads running; Running is running while the
// agent container runs; Succeeded and Failed are exited with the
// container's code. Start answers pending; the watch reports running.
// Events come from an informer on the broker's pods in each namespace.
//
// # What needs a kubelet
//
// The API server alone stores, validates, admits, authorizes and watches
// every object, so everything above but the process itself works against
// it (this package's tests run a real kube-apiserver with no kubelet).
// Running the agent, its output (pods/log), Exec (pods/exec), Attach
// (pods/attach), a graceful Stop (the kubelet sends SIGTERM and reports
// the exit code) and exit events need a kubelet on a node (the tests run a
// local stand-in that does its part through the API server); finishing
// the deletion of a claim
// (the pvc-protection finalizer) and binding claims need the
// controller-manager.
//
// # Security
//
// Agents' pods run as the sandbox ServiceAccount (service_account,
// DefaultServiceAccount), bound to nothing, with
// automountServiceAccountToken false: an agent holds no credentials for the
// API server and cannot read the namespace's Secrets. An agent's Hub
// secrets and token (Spec.SecretEnv) are in a Secret of its own, named in
// the pod by secretKeyRef: reading pods or records shows no secret. The
// runtime itself needs only the Role docs/kubernetes.md gives (the tests
// run under exactly it: internal/testenv/kube.RuntimeRules), which on
// Secrets are create, patch and delete (no get, list or watch).
// Every pod meets the Pod Security Standards "restricted" profile as built
// (podSecurity: a non-root user, all capabilities dropped, no privilege
// escalation, RuntimeDefault seccomp, a read-only root with /tmp an
// emptyDir); the run_as_user, run_as_group, fs_group and
// read_only_root_filesystem settings, which only a profile or the
// broker's defaults may set, change what a harness needs.
//
// # Settings
//
// Settings come in layers merged by Resolve: the agent's own (Spec.Labels
// "scion.k8s.<key>"), its profile's (Options.Profiles, chosen by the
// scion.profile label, else Options.DefaultProfile), the broker's
// (Options.Defaults). ParseSettings knows the keys (docs/kubernetes.md
// lists them). An agent's own layer may not set the pod security keys,
// and its context, namespace, service_account and NFS volume must be its
// profile's or listed in Options.AgentChoices (checkAgentPlacement);
// Create and CheckSpec refuse anything else with invalid_request before
// anything is made.
package kubernetes
