// Command testagent is the agent the docker runtime's tests run in a
// scratch image (it is built static, with CGO_ENABLED=0). It has no shell
// to lean on, so it does itself the few things the tests need:
//
//	testagent serve MARKER [-ignore-term] [-listen ADDR] [-ctl PATH]
//	    print MARKER on a line, then wait: for a code written into the
//	    FIFO PATH (default /workspace/ctl), upon which it prints
//	    "MARKER finished" and exits with that code, or for SIGTERM or
//	    SIGINT, upon which it exits 143 or 130 (unless -ignore-term).
//	    With -listen it answers every TCP connection with "hello MARKER".
//	testagent exit CODE [TEXT]
//	    print TEXT on stdout and "TEXT (stderr)" on stderr, exit CODE.
//	testagent echo
//	    copy stdin to stdout until end of input.
//	testagent getenv NAME...
//	    print the value of each variable on a line.
//	testagent pwd
//	    print the working directory.
//	testagent finish CODE [-ctl PATH]
//	    write CODE into a serving agent's FIFO (for use through exec).
//
// Run as PID 1 (without the engine's init) it also reaps zombies; signals
// need no forwarding since it starts no children.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: testagent serve|exit|echo|getenv|pwd|finish ...")
	}
	if os.Getpid() == 1 {
		go reap()
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "serve":
		serve(args)
	case "exit":
		if len(args) == 0 {
			fail("exit: need a code")
		}
		code, err := strconv.Atoi(args[0])
		if err != nil {
			fail("exit: %v", err)
		}
		if len(args) > 1 {
			text := strings.Join(args[1:], " ")
			fmt.Println(text)
			fmt.Fprintln(os.Stderr, text+" (stderr)")
		}
		os.Exit(code)
	case "echo":
		io.Copy(os.Stdout, os.Stdin)
	case "getenv":
		for _, k := range args {
			fmt.Println(os.Getenv(k))
		}
	case "pwd":
		wd, err := os.Getwd()
		if err != nil {
			fail("pwd: %v", err)
		}
		fmt.Println(wd)
	case "finish":
		fs := flag.NewFlagSet("finish", flag.ExitOnError)
		ctl := fs.String("ctl", "/workspace/ctl", "control FIFO")
		fs.Parse(args)
		f, err := os.OpenFile(*ctl, os.O_WRONLY, 0)
		if err != nil {
			fail("finish: %v", err)
		}
		fmt.Fprintln(f, fs.Arg(0))
		f.Close()
	default:
		fail("unknown mode %q", os.Args[1])
	}
}

func serve(args []string) {
	if len(args) == 0 {
		fail("serve: need a marker")
	}
	marker := args[0]
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	ignoreTerm := fs.Bool("ignore-term", false, "ignore SIGTERM")
	listen := fs.String("listen", "", "TCP address to greet connections on")
	ctl := fs.String("ctl", "/workspace/ctl", "control FIFO")
	fs.Parse(args[1:])

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	os.Remove(*ctl)
	if err := syscall.Mkfifo(*ctl, 0o666); err != nil {
		fail("serve: mkfifo: %v", err)
	}
	if *listen != "" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			fail("serve: %v", err)
		}
		go greet(ln, marker)
	}
	fmt.Println(marker)
	go func() {
		// Opening blocks until a writer comes: no CPU spent waiting.
		f, err := os.Open(*ctl)
		if err != nil {
			fail("serve: %v", err)
		}
		line, _ := bufio.NewReader(f).ReadString('\n')
		code, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			fail("serve: bad code %q", line)
		}
		fmt.Println(marker + " finished")
		os.Exit(code)
	}()
	sig := <-sigs
	fmt.Println(marker + " terminated by " + sig.String())
	os.Exit(128 + int(sig.(syscall.Signal)))
}

func greet(ln net.Listener, marker string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		fmt.Fprintln(c, "hello "+marker)
		c.Close()
	}
}

// reap collects exited children, as PID 1 must: orphans are re-parented
// to it and would otherwise stay zombies.
func reap() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	for range ch {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "testagent: "+format+"\n", args...)
	os.Exit(99)
}
