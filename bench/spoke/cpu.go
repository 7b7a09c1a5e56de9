package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's times (100 on
// every Linux this runs on).
const clockTick = 10 * time.Millisecond

// cpuNow is the CPU time (user + system) used so far by this process and
// every live descendant (sshd and the processes serving its sessions, ssh,
// tinyproxy): measured around one arm's transfer, the work it cost the
// machine, whatever share of the cores the rest of the machine left it.
func cpuNow() time.Duration {
	type proc struct {
		ppid int
		cpu  time.Duration
	}
	procs := map[int]proc{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15): comm may hold
		// spaces, so count fields after ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.Atoi(f[11])
		st, _ := strconv.Atoi(f[12])
		procs[pid] = proc{ppid: ppid, cpu: time.Duration(ut+st) * clockTick}
	}
	in := map[int]bool{os.Getpid(): true}
	// Descendants: repeat until no process joins (the tree is shallow).
	for changed := true; changed; {
		changed = false
		for pid, p := range procs {
			if !in[pid] && in[p.ppid] {
				in[pid], changed = true, true
			}
		}
	}
	var total time.Duration
	for pid := range in {
		total += procs[pid].cpu
	}
	return total
}
