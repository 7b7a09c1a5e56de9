package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
)

// maxLogLine bounds one line of -o json logs: a longer run of output
// without a newline is cut into lines of this size.
const maxLogLine = 1 << 20

// logsView is 'scion logs -o json' without -f.
type logsView struct {
	Agent   string   `json:"agent"`
	Project string   `json:"project"`
	Lines   []string `json:"lines"`
}

// logLineView is one line of 'scion logs -f -o json' (NDJSON).
type logLineView struct {
	Agent   string `json:"agent"`
	Project string `json:"project"`
	Line    string `json:"line"`
}

// logLinesJSON prints r's output as JSON: one document of every line, or
// with follow one object per line as it arrives.
func logLinesJSON(w io.Writer, r io.Reader, agent, project string, follow bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	sc.Split(scanLinesCut)
	enc := json.NewEncoder(w)
	v := logsView{Agent: agent, Project: project, Lines: []string{}}
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if follow {
			if err := enc.Encode(logLineView{Agent: agent, Project: project, Line: line}); err != nil {
				return err
			}
			continue
		}
		v.Lines = append(v.Lines, line)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if follow {
		return nil
	}
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// scanLinesCut is bufio.ScanLines that cuts a line longer than the
// buffer instead of failing.
func scanLinesCut(data []byte, atEOF bool) (int, []byte, error) {
	adv, tok, err := bufio.ScanLines(data, atEOF)
	if adv == 0 && tok == nil && err == nil && len(data) >= maxLogLine {
		return maxLogLine, data[:maxLogLine], nil
	}
	return adv, tok, err
}
