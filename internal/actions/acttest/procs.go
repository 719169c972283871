package acttest

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Process is a process found in /proc.
type Process struct {
	PID     int
	Cmdline string
	Root    string // where / is for it (a container's root file system)
}

func (p Process) String() string {
	return fmt.Sprintf("pid %d (%s, root %s)", p.PID, p.Cmdline, p.Root)
}

// ProcessesUsing returns the processes whose command line, working folder
// or root is any of paths or under one of them: what is left of servers
// and containers started with those folders.
func ProcessesUsing(paths ...string) []Process {
	var out []Process
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue // gone, or a kernel thread
		}
		p := Process{PID: pid, Cmdline: strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))}
		p.Root, _ = os.Readlink(filepath.Join("/proc", e.Name(), "root"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		for _, path := range paths {
			if path == "" {
				continue
			}
			if strings.Contains(p.Cmdline, path) || within(cwd, path) || within(p.Root, path) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// Listener is a listening TCP socket.
type Listener struct {
	Addr  net.IP
	Port  int
	Inode string
}

func (l Listener) String() string { return net.JoinHostPort(l.Addr.String(), strconv.Itoa(l.Port)) }

// Listening returns the machine's listening TCP sockets (IPv4 and IPv6),
// from /proc/net/tcp and /proc/net/tcp6.
func Listening() ([]Listener, error) {
	var out []Listener
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			hexIP, hexPort, ok := strings.Cut(fields[1], ":")
			if !ok {
				continue
			}
			ip, err := procIP(hexIP)
			if err != nil {
				continue
			}
			port, err := strconv.ParseInt(hexPort, 16, 32)
			if err != nil {
				continue
			}
			out = append(out, Listener{Addr: ip, Port: int(port), Inode: fields[9]})
		}
		file.Close()
	}
	return out, nil
}

// procIP decodes /proc/net/tcp's address: 32-bit words in host (little
// endian) order.
func procIP(s string) (net.IP, error) {
	b, err := hex.DecodeString(s)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil, fmt.Errorf("bad address %q", s)
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return net.IP(b), nil
}

// SocketOwners returns, per socket inode, the processes holding it.
func SocketOwners() map[string][]int {
	owners := map[string][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", e.Name(), "fd"))
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join("/proc", e.Name(), "fd", fd.Name()))
			if err != nil {
				continue
			}
			if inode, ok := strings.CutPrefix(link, "socket:["); ok {
				inode = strings.TrimSuffix(inode, "]")
				owners[inode] = append(owners[inode], pid)
			}
		}
	}
	return owners
}

// UnixListening reports whether a unix socket is bound at path
// (/proc/net/unix).
func UnixListening(path string) bool {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 8 && f[len(f)-1] == path {
			return true
		}
	}
	return false
}
