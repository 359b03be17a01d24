package httpapi

import (
	"os"
	"syscall"
)

// inode identifies the file behind a path, so that a symlink swap to a new
// file with the same size and time is still noticed.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
