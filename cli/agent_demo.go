package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
)

// newAgentDemoCmd is the demo agent's program. Agent images built FROM
// scratch hold only the scion binary, so the demo runs as a scion command:
// it prints a greeting and some progress, can start a child agent through
// the Hub exactly as any agent would (`scion start` with the Hub endpoint
// and token from its environment), can echo its stdin (for attach), and can
// stay up afterwards.
func newAgentDemoCmd() *cobra.Command {
	var steps int
	var interval time.Duration
	var child string
	var echo, stay, share bool
	c := &cobra.Command{
		Use:    "agent-demo",
		Short:  "The demo agent's program (runs inside an agent)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			wd, _ := os.Getwd()
			fmt.Fprintf(out, "hello from a Scion agent in %s\n", wd)
			fmt.Fprintf(out, "agent %s, hub %s\n", os.Getenv(api.EnvAgentID), os.Getenv(api.EnvHubEndpoint))
			for i := 1; i <= steps; i++ {
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(interval):
				}
				fmt.Fprintf(out, "working... step %d\n", i)
			}
			if share {
				if err := demoShare(out); err != nil {
					return err
				}
			}
			if child != "" {
				root := NewRoot(Daemons{}) // only `scion start`: no daemon
				// No --hub and no --image: the Hub endpoint and token come
				// from this agent's environment, the image from the Hub's
				// agent defaults.
				root.SetArgs([]string{"start", child, "--", "scion", "agent-demo", "--steps", "1", "--stay"})
				root.SetOut(out)
				root.SetErr(cmd.ErrOrStderr())
				if code := run(cmd.Context(), root); code != 0 {
					return fmt.Errorf("starting child agent %s failed (exit %d)", child, code)
				}
				fmt.Fprintf(out, "started child agent %s through the hub\n", child)
			}
			fmt.Fprintln(out, "demo agent done")
			if echo {
				// Read on a goroutine so a stop (SIGTERM cancels the
				// context) ends the agent at once, not after its grace.
				lines := make(chan string)
				go func() {
					defer close(lines)
					sc := bufio.NewScanner(cmd.InOrStdin())
					for sc.Scan() {
						lines <- sc.Text()
					}
				}()
			echoLoop:
				for {
					select {
					case <-cmd.Context().Done():
						return nil
					case l, ok := <-lines:
						if !ok {
							break echoLoop
						}
						fmt.Fprintf(out, "agent got: %s\n", l)
					}
				}
			}
			if stay {
				<-cmd.Context().Done()
			}
			return nil
		},
	}
	c.Flags().IntVar(&steps, "steps", 5, "progress lines to print")
	c.Flags().DurationVar(&interval, "interval", time.Second, "time between progress lines")
	c.Flags().StringVar(&child, "start-child", "", "start a child agent with this name through the Hub")
	c.Flags().BoolVar(&echo, "echo", false, "echo stdin lines after the demo (for scion attach)")
	c.Flags().BoolVar(&stay, "stay", false, "keep running after the demo until stopped")
	c.Flags().BoolVar(&share, "share", false, "leave a note in the project's shared directory and list the notes there")
	return c
}

// demoShare writes <agent ID>.note in the project's shared directory
// (SCION_SHARED_DIR) and prints every note there: agents of one project
// see each other's, on other brokers too when the brokers keep shared
// directories on one export.
func demoShare(out io.Writer) error {
	dir := os.Getenv(api.EnvSharedDir)
	if dir == "" {
		return fmt.Errorf("no shared directory: %s is not set", api.EnvSharedDir)
	}
	id := os.Getenv(api.EnvAgentID)
	if err := os.WriteFile(filepath.Join(dir, id+".note"), []byte("from "+id+"\n"), 0o644); err != nil {
		return err
	}
	notes, err := filepath.Glob(filepath.Join(dir, "*.note"))
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(out, "shared note: %s\n", filepath.Base(n))
	}
	return nil
}
