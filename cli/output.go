package cli

// Output formats (-o).
const (
	outputTable = "table"
	outputJSON  = "json"
)

func (a *app) validateOutput() error {
	switch a.output {
	case outputTable, outputJSON:
		return nil
	}
	return usageErrorf("invalid --output %q: use table or json", a.output)
}

func (a *app) json() bool { return a.output == outputJSON }
