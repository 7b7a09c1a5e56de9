package process

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Every process the runtime launches carries two environment variables,
// inherited by whatever it starts in turn. They tie a process found in
// /proc to the state directory and the launch that made it, so that a
// process started by a broker that died before it could record the pid is
// still found: adopted when it is the launch the record names, killed
// otherwise (see reconcile).
const (
	// EnvStateDir is the runtime's state directory (absolute).
	EnvStateDir = "SCION_PROCESS_STATE_DIR"
	// EnvLaunch is "<agentID>/<launch nonce>".
	EnvLaunch = "SCION_PROCESS_LAUNCH"
)

// testHook, when set (tests only), is called at the named points of a
// launch: "recorded" once the launch nonce is on disk and before the
// process starts, "started" once it runs and before its pid is recorded.
var testHook func(stage string)

func hook(stage string) {
	if testHook != nil {
		testHook(stage)
	}
}

// newLaunchID returns a random launch nonce.
func newLaunchID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// markedProc is a live process that carries this runtime's marker.
type markedProc struct {
	id      procID
	agentID string
	launch  string
	leader  bool // the launch's session leader: the wrapper itself
}

// markedProcs lists the live processes whose environment names stateDir,
// optionally only those of one agent. Processes it may not read (another
// user's) cannot be ours and are skipped.
func markedProcs(stateDir, onlyAgent string) []markedProc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	wantDir := []byte(EnvStateDir + "=" + stateDir)
	var out []markedProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, wantDir) {
			continue
		}
		var dir, launch string
		for _, kv := range bytes.Split(env, []byte{0}) {
			if k, v, ok := strings.Cut(string(kv), "="); ok {
				switch k {
				case EnvStateDir:
					dir = v
				case EnvLaunch:
					launch = v
				}
			}
		}
		agentID, nonce, ok := strings.Cut(launch, "/")
		if dir != stateDir || !ok {
			continue
		}
		if onlyAgent != "" && agentID != onlyAgent {
			continue
		}
		ps, err := readProcStat(pid)
		if err != nil || ps.state == 'Z' || ps.state == 'X' {
			continue
		}
		out = append(out, markedProc{
			id:      procID{Pid: pid, StartTicks: ps.startTicks, BootID: bootID()},
			agentID: agentID, launch: nonce, leader: ps.session == pid,
		})
	}
	return out
}

// killMarked SIGKILLs the given processes (each only while it is still the
// process found, so a recycled pid is never hit) and waits for them to die.
func killMarked(ps []markedProc) {
	for _, p := range ps {
		if p.leader {
			signalGroup(p.id, syscall.SIGKILL)
		}
		if alive, _ := probe(p.id); alive {
			syscall.Kill(p.id.Pid, syscall.SIGKILL)
		}
	}
	deadline := time.Now().Add(killWait)
	for _, p := range ps {
		for time.Now().Before(deadline) {
			if alive, _ := probe(p.id); !alive {
				break
			}
			time.Sleep(probeInterval)
		}
	}
}

// startTime converts a process's start ticks to wall time, from the boot
// time in /proc/stat and the kernel's USER_HZ (100 on every Linux port
// that Go supports); zero if unknown.
func startTime(ticks uint64) time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			bt, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}
			}
			const userHZ = 100
			return time.Unix(bt, 0).Add(time.Duration(ticks) * time.Second / userHZ).UTC()
		}
	}
	return time.Time{}
}
