// Command pause is the real node's pod sandbox process (containerd's
// sandbox_image, hack/node/install.sh): it holds the pod's namespaces open,
// reaps the orphans re-parented to it (it is PID 1 of the pod when the pod
// shares its PID namespace) and exits on SIGTERM or SIGINT.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if os.Getpid() != 1 {
		// Still useful outside a PID namespace (e.g. by hand), but say so.
		os.Stderr.WriteString("pause: not PID 1, orphans are not mine to reap\n")
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		// Every child that has ended, without blocking on the living.
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
