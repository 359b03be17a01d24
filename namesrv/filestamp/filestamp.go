// Package filestamp tells whether a file changed without reading it. The
// kubelet updates a mounted ConfigMap or Secret by swapping a symlink to a
// new directory, so a stamp follows symlinks and includes the device and
// inode: a swap to a file of the same size and time is still a change.
package filestamp

import (
	"os"
	"syscall"
	"time"
)

// Stamp identifies one version of a file. The zero Stamp is no file.
type Stamp struct {
	dev, ino uint64
	size     int64
	modTime  time.Time
}

// Of stats path, following symlinks.
func Of(path string) (Stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Stamp{}, err
	}
	return FromInfo(fi), nil
}

// FromInfo is the stamp of a file already stat'ed.
func FromInfo(fi os.FileInfo) Stamp {
	s := Stamp{size: fi.Size(), modTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino = uint64(st.Dev), st.Ino
	}
	return s
}

// Equal reports whether both stamps are of the same version of a file.
func (s Stamp) Equal(o Stamp) bool {
	return s.dev == o.dev && s.ino == o.ino && s.size == o.size && s.modTime.Equal(o.modTime)
}
