package remoting

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// CertFilesOptions name the files of a CertFiles.
type CertFilesOptions struct {
	// CertPath and KeyPath hold the PEM certificate chain and its
	// unencrypted private key.
	CertPath, KeyPath string
	// ClientCAPath holds the PEM CA certificates that client certificates
	// are verified against; it is required unless ClientAuth is
	// tls.NoClientCert.
	ClientCAPath string
	ClientAuth   tls.ClientAuthType
	Logger       *slog.Logger
}

// CertFiles is a server TLS configuration that follows its files: each new
// handshake compares the files' identity (device, inode, size, modification
// time) with the loaded version and re-reads them when any differs. A
// Kubernetes Secret update, which swaps a symlink, therefore applies to the
// next connection without a restart, and established connections keep
// their session. A new version that does not load (unreadable, half
// written, a key that does not match the certificate) is logged and
// counted, and the previous one stays in use until the files change again.
type CertFiles struct {
	opts CertFilesOptions
	log  *slog.Logger

	cur atomic.Pointer[certState]

	mu     sync.Mutex // serializes reloads
	failed fileStamps // the version that last failed to load

	reloads, failures atomic.Int64
}

// certState is one loaded version of the files.
type certState struct {
	stamps   fileStamps
	config   *tls.Config
	notAfter time.Time
}

// fileStamp identifies a version of a file without reading it.
type fileStamp struct {
	dev, ino uint64
	size     int64
	mtime    int64
	missing  bool
}

// fileStamps are the stamps of the certificate, the key and the client CAs.
type fileStamps [3]fileStamp

// NewCertFiles loads the files; an error here is a configuration error and
// should stop the server from starting.
func NewCertFiles(opts CertFilesOptions) (*CertFiles, error) {
	if opts.CertPath == "" || opts.KeyPath == "" {
		return nil, errors.New("TLS needs both a certificate file and a key file")
	}
	if opts.ClientAuth != tls.NoClientCert && opts.ClientCAPath == "" {
		return nil, errors.New("verifying client certificates needs a file of trusted CA certificates")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	f := &CertFiles{opts: opts, log: opts.Logger}
	st, err := f.load(f.stat())
	if err != nil {
		return nil, err
	}
	f.cur.Store(st)
	return f, nil
}

// Config is the configuration to serve with: every handshake picks up the
// current version of the files.
func (f *CertFiles) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: f.configForClient}
}

// NotAfter is the expiry of the certificate in use.
func (f *CertFiles) NotAfter() time.Time { return f.cur.Load().notAfter }

// Reloads counts new versions loaded after the start.
func (f *CertFiles) Reloads() int64 { return f.reloads.Load() }

// Failures counts new versions that did not load.
func (f *CertFiles) Failures() int64 { return f.failures.Load() }

func (f *CertFiles) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	stamps := f.stat()
	cur := f.cur.Load()
	if stamps == cur.stamps {
		return cur.config, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur = f.cur.Load()
	if stamps == cur.stamps || stamps == f.failed {
		return cur.config, nil
	}
	st, err := f.load(stamps)
	if err != nil {
		f.failed = stamps
		f.failures.Add(1)
		f.log.Error("cannot reload the TLS certificate; still serving the previous one",
			"err", err, "notAfter", cur.notAfter)
		return cur.config, nil
	}
	f.failed = fileStamps{}
	f.cur.Store(st)
	f.reloads.Add(1)
	f.log.Info("reloaded the TLS certificate", "cert", f.opts.CertPath, "notAfter", st.notAfter)
	return st.config, nil
}

func (f *CertFiles) stat() fileStamps {
	var s fileStamps
	for i, path := range []string{f.opts.CertPath, f.opts.KeyPath, f.opts.ClientCAPath} {
		if path != "" {
			s[i] = stampOf(path)
		}
	}
	return s
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{missing: true}
	}
	s := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino = uint64(st.Dev), st.Ino
	}
	return s
}

// load reads the files into a state stamped with stamps, taken before the
// reads: should a file change in between, the next handshake sees a
// different stamp and loads again.
func (f *CertFiles) load(stamps fileStamps) (*certState, error) {
	certPEM, err := os.ReadFile(f.opts.CertPath)
	if err != nil {
		return nil, fmt.Errorf("read TLS certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(f.opts.KeyPath)
	if err != nil {
		return nil, fmt.Errorf("read TLS key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate %s and key %s: %w", f.opts.CertPath, f.opts.KeyPath, err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("parse TLS certificate %s: %w", f.opts.CertPath, err)
		}
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   f.opts.ClientAuth,
	}
	if f.opts.ClientCAPath != "" {
		caPEM, err := os.ReadFile(f.opts.ClientCAPath)
		if err != nil {
			return nil, fmt.Errorf("read trusted CA certificates: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("no PEM certificate in %s", f.opts.ClientCAPath)
		}
		cfg.ClientCAs = pool
	}
	return &certState{stamps: stamps, config: cfg, notAfter: leaf.NotAfter}, nil
}
