package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/runtime/docker"
)

func newImageCmd() *cobra.Command {
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
			self, err := scionBinary()
			if err != nil {
				return err
			}
			cl, err := docker.NewClient("")
			if err != nil {
				return err
			}
			defer cl.Close()
			tag, err := docker.BuildDemoImage(cmd.Context(), cl, self)
			if err != nil {
				return fmt.Errorf("build the demo image: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Built %s from %s.\n", tag, self)
			return nil
		},
	})
	return c
}
