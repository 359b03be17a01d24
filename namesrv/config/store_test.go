package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// newStore returns a store persisting under a fresh directory, with one
// extra key as if it came from the -c file.
func newStore(t *testing.T) (*Store, string) {
	t.Helper()
	setHome(t)
	cfg := Default()
	cfg.ConfigStorePath = filepath.Join(t.TempDir(), "conf", "namesrv.properties")
	return NewStore(cfg, props("fileOnlyKey", "v1"), nil), cfg.ConfigStorePath
}

func fileContent(t *testing.T, path string) (string, bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data), true
}

type recorder struct {
	mu    sync.Mutex
	calls [][2]*Config
}

func (r *recorder) fn(old, cur *Config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, [2]*Config{old, cur})
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func TestStoreText(t *testing.T) {
	s, _ := newStore(t)
	text := s.Text()
	if want := Text(s.Load(), props("fileOnlyKey", "v1")); !bytes.Equal(text, want) {
		t.Fatalf("Text =\n%s\nwant\n%s", text, want)
	}
	if !strings.Contains(string(text), "\nfileOnlyKey=v1\n") {
		t.Fatalf("extra key missing:\n%s", text)
	}
	text[0] = '#'
	if s.Text()[0] == '#' {
		t.Fatal("Text returned the store's own buffer")
	}
}

func TestStoreCopiesStartupConfig(t *testing.T) {
	setHome(t)
	cfg := Default()
	s := NewStore(cfg, nil, nil)
	cfg.ListenPort = 1
	if s.Load().ListenPort != 9876 {
		t.Fatal("the store shares the caller's Config")
	}
}

func TestUpdateNoop(t *testing.T) {
	for _, body := range []string{"", "# only a comment\n\n"} {
		s, path := newStore(t)
		var rec recorder
		s.Subscribe(rec.fn)
		before := s.Load()
		if err := s.Update([]byte(body)); err != nil {
			t.Fatalf("Update(%q) = %v", body, err)
		}
		if s.Load() != before || rec.count() != 0 {
			t.Fatalf("Update(%q) changed something", body)
		}
		if _, exists := fileContent(t, path); exists {
			t.Fatalf("Update(%q) wrote %s", body, path)
		}
	}
	s, _ := newStore(t)
	if err := s.Update(nil); err != nil {
		t.Fatalf("Update(nil) = %v", err)
	}
}

func TestUpdateParseError(t *testing.T) {
	s, path := newStore(t)
	before := s.Load()
	err := s.Update([]byte("orderMessageEnable=true\nproductEnvName=\\u00G1\n"))
	if !errors.Is(err, ErrParse) {
		t.Fatalf("Update = %v, want ErrParse", err)
	}
	if ErrParse.Error() != "string2Properties error" {
		t.Fatalf("ErrParse text %q is not Java's remark", ErrParse)
	}
	if !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error %q lacks the line", err)
	}
	if s.Load() != before {
		t.Fatal("a body that does not parse changed the config")
	}
	if _, exists := fileContent(t, path); exists {
		t.Fatal("a body that does not parse was persisted")
	}
}

func TestUpdateBlackList(t *testing.T) {
	tests := []string{
		"configBlackList=x",
		"configStorePath=/tmp/x",
		"kvConfigPath=/tmp/kv.json",
		"rocketmqHome=/tmp",
		"liveBrokersPath=/etc/passwd",
		"orderMessageEnable=true\nkvConfigPath=/tmp/kv.json",
		"rocketmqHome=/tmp\norderMessageEnable=true",
		"listenPort=1", // added through configBlackList below
		"orderMessageEnable=true\nbindAddress=1.2.3.4",
		"tls.server.mode=disabled",
		"tls.server.certPath=/tmp/evil.crt",
		"tls.server.keyPath=/tmp/evil.key",
		"tls.server.trustCertPath=/tmp/evil-ca.crt",
		"tls.server.need.client.auth=none",
		"authzEnable=false",
		"authzBrokerIdentities=cn:*",
		"authzBrokerNetworks=0.0.0.0/0",
		"authzAdminIdentities=cn:*",
		"authzAdminNetworks=0.0.0.0/0",
		"authzReadIdentities=cn:*",
		"authzReadNetworks=0.0.0.0/0",
		"authzBrokerNameOwnership=false",
		"httpAuthScope=none",
		"httpAuthTokenFile=/tmp/mine",
		"httpTLSMode=disabled",
	}
	for _, body := range tests {
		t.Run(body, func(t *testing.T) {
			setHome(t)
			cfg := Default()
			cfg.ConfigStorePath = filepath.Join(t.TempDir(), "namesrv.properties")
			cfg.ConfigBlackList = "configBlackList;configStorePath;kvConfigPath; listenPort;;bindAddress"
			s := NewStore(cfg, nil, nil)
			var rec recorder
			s.Subscribe(rec.fn)
			before := s.Load()
			err := s.Update([]byte(body))
			if err != ErrBlackListed {
				t.Fatalf("Update = %v, want ErrBlackListed", err)
			}
			if err.Error() != "Can not update config in black list." {
				t.Fatalf("remark %q is not Java's", err)
			}
			if s.Load() != before || s.Load().OrderMessageEnable || rec.count() != 0 {
				t.Fatal("a refused update applied something")
			}
			if _, exists := fileContent(t, cfg.ConfigStorePath); exists {
				t.Fatal("a refused update was persisted")
			}
		})
	}
}

func TestUpdateInvalidValueAppliesNothing(t *testing.T) {
	s, path := newStore(t)
	var rec recorder
	s.Subscribe(rec.fn)
	before := s.Load()
	err := s.Update([]byte("orderMessageEnable=true\nenableTopicList=nope\n"))
	var ve *ValueError
	if !errors.As(err, &ve) || ve.Key != "enableTopicList" || ve.Value != "nope" {
		t.Fatalf("Update = %v, want a ValueError naming enableTopicList", err)
	}
	if s.Load() != before || s.Load().OrderMessageEnable || rec.count() != 0 {
		t.Fatal("an update with an invalid value applied its valid part")
	}
	if _, exists := fileContent(t, path); exists {
		t.Fatal("an invalid update was persisted")
	}
}

func TestUpdateRefusesCombinationsThatWouldStopTheNextStart(t *testing.T) {
	s, path := newStore(t)
	before := s.Load()
	err := s.Update([]byte("routeGateEnable=true\nrouteGateTimeoutSeconds=0\n"))
	var ve *ValueError
	if !errors.As(err, &ve) || ve.Key != "routeGateTimeoutSeconds" {
		t.Fatalf("Update = %v, want a ValueError naming routeGateTimeoutSeconds", err)
	}
	if s.Load() != before {
		t.Fatal("a refused combination was applied")
	}
	if _, exists := fileContent(t, path); exists {
		t.Fatal("a refused combination was persisted")
	}
	if err := s.Update([]byte("routeGateTimeoutSeconds=0\n")); err != nil {
		t.Fatalf("a zero timeout with the gate off: %v", err)
	}
}

func TestUpdateAppliesPersistsAndNotifies(t *testing.T) {
	s, path := newStore(t)
	var rec recorder
	s.Subscribe(rec.fn)
	first := s.Load()

	if err := s.Update([]byte("orderMessageEnable=true\nlistenPort=1234\nfileOnlyKey=v2\nbrandNewKey=x\n")); err != nil {
		t.Fatal(err)
	}
	cur := s.Load()
	if !cur.OrderMessageEnable || cur.ListenPort != 1234 {
		t.Fatalf("not applied: %+v", cur)
	}
	if first.OrderMessageEnable || first.ListenPort != 9876 {
		t.Fatal("the previous snapshot was modified")
	}
	text := string(s.Text())
	if !strings.Contains(text, "\nfileOnlyKey=v2\n") {
		t.Fatalf("known extra key not updated:\n%s", text)
	}
	if strings.Contains(text, "brandNewKey") {
		t.Fatalf("a key unknown to the config and to the -c file was added (Java ignores it):\n%s", text)
	}
	onDisk, ok := fileContent(t, path)
	if !ok || onDisk != text {
		t.Fatalf("persisted file =\n%s\nwant the config text\n%s", onDisk, text)
	}
	if _, exists := fileContent(t, path+".bak"); exists {
		t.Fatal("a .bak was written although there was no previous file")
	}
	if rec.count() != 1 || rec.calls[0][0] != first || rec.calls[0][1] != cur {
		t.Fatalf("subscriber calls = %v", rec.calls)
	}

	if err := s.Update([]byte("orderMessageEnable=false")); err != nil {
		t.Fatal(err)
	}
	if bak, _ := fileContent(t, path+".bak"); bak != text {
		t.Fatalf(".bak =\n%s\nwant the previous content\n%s", bak, text)
	}
	if now, _ := fileContent(t, path); now != string(s.Text()) || !strings.Contains(now, "orderMessageEnable=false\n") {
		t.Fatalf("second update not persisted:\n%s", now)
	}
	if rec.count() != 2 || rec.calls[1][0] != cur || rec.calls[1][1].OrderMessageEnable {
		t.Fatalf("second notification wrong: %v", rec.calls)
	}

	// The persisted file is a valid -c file that reproduces the config.
	fs, cl := NewCommandLine("namesrv", &bytes.Buffer{})
	clearEnv(t)
	if err := fs.Parse([]string{"-c", path}); err != nil {
		t.Fatal(err)
	}
	reloaded, extra, _, err := cl.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if *reloaded != *s.Load() || !reflect.DeepEqual(extra, props("fileOnlyKey", "v2")) {
		t.Fatalf("reloaded %+v extra %q, want %+v", reloaded, extra, s.Load())
	}
}

func TestUpdatePersistFailureChangesNothing(t *testing.T) {
	s, path := newStore(t)
	if err := os.MkdirAll(path, 0o755); err != nil { // the file's place is taken by a directory
		t.Fatal(err)
	}
	var rec recorder
	s.Subscribe(rec.fn)
	before := s.Load()
	beforeText := s.Text()
	err := s.Update([]byte("orderMessageEnable=true"))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Update = %v, want an error naming %s", err, path)
	}
	if s.Load() != before || !bytes.Equal(s.Text(), beforeText) || rec.count() != 0 {
		t.Fatal("a failed persist changed the live config")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
}

func TestNewStoreRemovesTemporaryFiles(t *testing.T) {
	setHome(t)
	dir := t.TempDir()
	cfg := Default()
	cfg.ConfigStorePath = filepath.Join(dir, "namesrv.properties")
	leftover := writeFile(t, dir, "namesrv.properties.tmp-123", "half")
	other := writeFile(t, dir, "other.tmp-1", "keep")
	NewStore(cfg, nil, nil)
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leftover temp file still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("unrelated file removed: %v", err)
	}
}

func TestStoreConcurrentUpdatesAndReads(t *testing.T) {
	s, path := newStore(t)
	var order []int
	var mu sync.Mutex
	s.Subscribe(func(old, cur *Config) {
		mu.Lock()
		defer mu.Unlock()
		if old.WaitSecondsForService == cur.WaitSecondsForService {
			t.Errorf("subscriber saw no change: %d", cur.WaitSecondsForService)
		}
		order = append(order, cur.WaitSecondsForService)
	})
	const writers, updates = 4, 5
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				runtime.Gosched()
				c := s.Load()
				if c.WaitSecondsForService < 45 || !bytes.Contains(s.Text(), []byte("waitSecondsForService=")) {
					t.Error("reader saw a broken snapshot")
					return
				}
			}
		})
	}
	var writersWG sync.WaitGroup
	for w := range writers {
		writersWG.Go(func() {
			for i := range updates {
				v := 1000 + w*updates + i
				if err := s.Update(fmt.Appendf(nil, "waitSecondsForService=%d\n", v)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	writersWG.Wait()
	close(stop)
	wg.Wait()
	if len(order) != writers*updates {
		t.Fatalf("%d notifications, want %d", len(order), writers*updates)
	}
	last := order[len(order)-1]
	if s.Load().WaitSecondsForService != last {
		t.Fatalf("live value %d is not the last notified %d", s.Load().WaitSecondsForService, last)
	}
	onDisk, _ := fileContent(t, path)
	if !strings.Contains(onDisk, fmt.Sprintf("waitSecondsForService=%d\n", last)) {
		t.Fatal("persisted file does not hold the last update")
	}
	if !slices.ContainsFunc(order, func(v int) bool { return v == 1000 }) {
		t.Fatal("an update is missing from the notifications")
	}
}
