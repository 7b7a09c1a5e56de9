// Command spoke measures the fleet's network tiers on loopback: the SSH
// bastion tier (spoke/tunnel) against the stock client's `ssh -L` to the
// same sshd, and the proxy tier (spoke/fleet's transport through a real
// tinyproxy CONNECT) against a direct connection, each pair in the same
// run, interleaved ABBA round by round so that the load of a shared
// machine falls on both arms alike.
//
//	go run ./bench/spoke                                     # 20 rounds: default ciphers, then aes128-gcm and chacha20-poly1305 on both; the proxy tier
//	go run ./bench/spoke -rounds 31 -ciphers default         # one cipher setting
//	go run ./bench/spoke -tiers proxy                        # the proxy tier only
//	go run ./bench/spoke -cpuprofile /tmp/spoke.pprof        # profile of this process (the tunnel's side)
//
// A round downloads -size bytes -per times over each arm (A then B in
// even rounds, B then A in odd ones); the arm's figure for the round is
// its bytes over its own wall time, and the round's ratio is tunnel over
// ssh -L (proxy over direct). The table gives the medians over rounds of
// each arm's MB/s and of the ratio, with the ratio's range.
//
// sshd is Debian's openssh-server and tinyproxy Debian's tinyproxy, both
// children of this process on loopback ports (internal/testenv/sshd,
// internal/testenv/proxy); nothing leaves 127.0.0.1.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

func main() {
	rounds := flag.Int("rounds", 20, "interleaved rounds per comparison")
	per := flag.Int("per", 2, "downloads per arm per round")
	size := flag.Int64("size", 16<<20, "bytes per download")
	ciphers := flag.String("ciphers", "default,aes128-gcm@openssh.com,chacha20-poly1305@openssh.com",
		"SSH settings to compare, comma-separated: default (each client's own preference) or a cipher forced on both")
	tiers := flag.String("tiers", "ssh,proxy", "comparisons to run: ssh, proxy")
	h1 := flag.Bool("h1", false, "the proxy tier's source speaks HTTP/1.1 only (an API server speaks HTTP/2)")
	kubeToo := flag.Bool("kube", true, "also measure small-GET latency against the kube-apiserver fixture (skipped when not built)")
	latencyN := flag.Int("latency", 300, "small GETs per tier for the latency table")
	flag.IntVar(&readBuf, "buf", 256<<10, "read buffer of the downloading client, bytes")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of this process here")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("%d rounds x %d downloads of %d MiB per arm, ABBA, %d KiB reads; GOMAXPROCS=%d; loadavg %s\n",
		*rounds, *per, *size>>20, readBuf>>10, runtime.GOMAXPROCS(0), loadavg())

	dir, err := os.MkdirTemp("", "bench-spoke")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	src := sourceServer(*size)

	for _, tier := range strings.Split(*tiers, ",") {
		switch tier {
		case "ssh":
			for _, c := range strings.Split(*ciphers, ",") {
				if c == "default" {
					c = ""
				}
				if err := sshTier(dir, src, c, *rounds, *per, *size); err != nil {
					log.Fatal(err)
				}
			}
		case "proxy":
			if err := proxyTier(dir, *rounds, *per, *size, *latencyN, *h1, *kubeToo); err != nil {
				log.Fatal(err)
			}
		default:
			log.Fatalf("unknown tier %q", tier)
		}
	}
}

// arm is one side of a comparison: a name, the cipher it negotiated (or
// another note) and one download.
type arm struct {
	name, note string
	get        func(ctx context.Context) (int64, error)
}

// compare runs the arms interleaved (in order in even rounds, reversed in
// odd ones: ABBA for two) and prints a table row per arm but the last,
// the baseline every other arm's ratio is taken against.
func compare(title string, arms []arm, rounds, per int, size int64) error {
	mbps := make([][]float64, len(arms))
	cpu := make([][]float64, len(arms)) // CPU ms per download, the machine's
	measure := func(x arm) (float64, float64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cpu0 := cpuNow() // reading /proc takes a few ms: outside the timed part
		start := time.Now()
		for range per {
			n, err := x.get(ctx)
			if err != nil {
				return 0, 0, fmt.Errorf("%s: %w", x.name, err)
			}
			if n != size {
				return 0, 0, fmt.Errorf("%s: read %d of %d bytes", x.name, n, size)
			}
		}
		wall := time.Since(start)
		used := cpuNow() - cpu0
		return float64(per) * float64(size) / wall.Seconds() / 1e6, float64(used.Milliseconds()) / float64(per), nil
	}
	// One warm-up download each: connections up, buffers grown.
	for _, x := range arms {
		if _, err := x.get(context.Background()); err != nil {
			return fmt.Errorf("%s: warm-up: %w", x.name, err)
		}
	}
	for r := range rounds {
		for j := range arms {
			i := j
			if r%2 == 1 {
				i = len(arms) - 1 - j
			}
			v, c, err := measure(arms[i])
			if err != nil {
				return err
			}
			mbps[i], cpu[i] = append(mbps[i], v), append(cpu[i], c)
		}
	}
	base := arms[len(arms)-1]
	baseV := mbps[len(arms)-1]
	fmt.Printf("\n%s (loadavg after: %s)\n", title, loadavg())
	fmt.Printf("| arm | via | MB/s | baseline | via | MB/s | ratio median | ratio range | CPU ms/download | baseline's | CPU ratio |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, x := range arms[:len(arms)-1] {
		ratio := make([]float64, rounds)
		for r := range rounds {
			ratio[r] = mbps[i][r] / baseV[r]
		}
		fmt.Printf("| %s | %s | %.0f | %s | %s | %.0f | **%.2fx** | %.2f-%.2f | %.0f | %.0f | %.2fx |\n",
			x.name, x.note, median(mbps[i]), base.name, base.note, median(baseV), median(ratio), slices.Min(ratio), slices.Max(ratio),
			median(cpu[i]), median(cpu[len(arms)-1]), median(cpu[i])/median(cpu[len(arms)-1]))
	}
	return nil
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// readBuf is -buf: 256 KiB (8 SSH packets) by default, as a client that
// streams a body would read; io.Copy to io.Discard reads 8 KiB at a time.
var readBuf int

// readAll drains c with a readBuf buffer.
func readAll(c io.Reader) (int64, error) {
	buf := make([]byte, readBuf)
	return io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{c}, buf)
}

// sourceServer writes size bytes to every connection and closes it.
func sourceServer(size int64) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	chunk := make([]byte, 256<<10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for left := size; left > 0; left -= int64(len(chunk)) {
					if _, err := c.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}
