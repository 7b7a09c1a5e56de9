package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// procID identifies one process across pid reuse and reboots.
type procID struct {
	Pid int `json:"pid"`
	// StartTicks is the process's start time in clock ticks after boot,
	// field 22 of /proc/<pid>/stat: a recycled pid has a later one.
	StartTicks uint64 `json:"startTicks"`
	// BootID tells a pid recorded before a reboot from one after it.
	BootID string `json:"bootId"`
}

// procState is what the runtime needs from /proc/<pid>/stat.
type procState struct {
	state      byte // R, S, D, T, t, Z, X, ...
	session    int  // field 6: the session ID (the wrapper leads its own)
	startTicks uint64
}

// readProcStat parses /proc/<pid>/stat. The second field, the command
// name, is in parentheses and may itself contain spaces and parentheses,
// so fields are counted from the last ')'.
func readProcStat(pid int) (procState, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procState{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procState{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state), so field 22 (starttime) is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return procState{}, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	ticks, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return procState{}, fmt.Errorf("/proc/%d/stat: starttime: %w", pid, err)
	}
	session, _ := strconv.Atoi(fields[3])
	return procState{state: fields[0][0], session: session, startTicks: ticks}, nil
}

// bootID is the current boot's ID, or "" where the kernel does not say.
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// identify returns the identity of the live process pid.
func identify(pid int) (procID, error) {
	ps, err := readProcStat(pid)
	if err != nil {
		return procID{}, err
	}
	return procID{Pid: pid, StartTicks: ps.startTicks, BootID: bootID()}, nil
}

// probe reports whether p is still alive, and if so whether it is stopped
// (SIGSTOP). A zombie counts as dead: it has exited and only awaits
// reaping.
func probe(p procID) (alive, stopped bool) {
	if p.Pid <= 0 || (p.BootID != "" && p.BootID != bootID()) {
		return false, false
	}
	ps, err := readProcStat(p.Pid)
	if err != nil || ps.startTicks != p.StartTicks {
		return false, false
	}
	switch ps.state {
	case 'Z', 'X', 'x':
		return false, false
	case 'T', 't':
		return true, true
	}
	return true, false
}

// signalGroup sends sig to p's process group (the agent was started as a
// session and group leader, so its pgid is its pid), but only while p is
// verifiably alive, so that a recycled pid is never signalled. It reports
// whether p was alive.
func signalGroup(p procID, sig syscall.Signal) (bool, error) {
	if alive, _ := probe(p); !alive {
		return false, nil
	}
	err := syscall.Kill(-p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return false, nil
	}
	return true, err
}
