package scratch

import (
	"os"
	"syscall"
)

// tmpfsMagic is statfs's f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// minRoom is the room a memory file system must have left to be used:
// half of the 64 MiB a container's /dev/shm gets by default. A tree that
// needs more is made on disk after all (Fill).
const minRoom = 32 << 20

// memoryDir is /dev/shm when TMPDIR is not set and it is a tmpfs with
// minRoom left, or "".
func memoryDir() string {
	if os.Getenv("TMPDIR") != "" {
		return ""
	}
	return tmpfsWithRoom("/dev/shm")
}

// tmpfsWithRoom is dir when it is a tmpfs with minRoom left, or "".
func tmpfsWithRoom(dir string) string {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil || st.Type != tmpfsMagic {
		return ""
	}
	if st.Bavail*uint64(st.Bsize) < minRoom {
		return ""
	}
	return dir
}
