package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
)

// maxExecStdin bounds what `scion exec` reads from a pipe: stdin travels
// whole in the request.
const maxExecStdin = api.MaxRequestBody / 2

// attachLinger is how long `scion attach` keeps printing output after its
// stdin ended before it detaches.
const attachLinger = 2 * time.Second

func newExecCmd(a *app) *cobra.Command {
	var project string
	var env []string
	var tty bool
	c := &cobra.Command{
		Use:   "exec <name> -- <command> [args...]",
		Short: "Run a command inside a running agent",
		Long: `Run a command inside a running agent, through the Hub and the agent's broker.
Output streams back as it is produced; scion exits with the command's exit code.
When stdin is a pipe or a file it is sent as the command's input.`,
		Example: `  scion exec fixer -- git status
  echo hello | scion exec fixer -- cat`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, command, err := nameAndCommand(cmd, args)
			if err != nil {
				return err
			}
			if len(command) == 0 {
				return usageErrorf("put the command after --, as in: scion exec %s -- ls", name)
			}
			envMap, err := parseEnv(env)
			if err != nil {
				return err
			}
			req := api.ExecRequest{Command: command, Env: envMap, TTY: tty}
			if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice == 0 {
				in, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxExecStdin+1))
				if err != nil {
					return err
				}
				if len(in) > maxExecStdin {
					return fmt.Errorf("stdin is larger than %d bytes; copy the data into the workspace instead", maxExecStdin)
				}
				req.Stdin = in
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			code, err := cl.Exec(cmd.Context(), name, projectOrDefault(project), req, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if code != 0 {
				return &exitCodeError{code: code}
			}
			return nil
		},
	}
	projectFlag(c, &project)
	c.Flags().StringArrayVar(&env, "env", nil, "extra environment variable KEY=VALUE for the command (repeatable)")
	c.Flags().BoolVarP(&tty, "tty", "t", false, "merge stderr into stdout, as a terminal would")
	return c
}
