package cli

import "syscall"

var sigwinch = syscall.SIGWINCH
