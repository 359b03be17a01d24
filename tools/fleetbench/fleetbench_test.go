package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSmallFleet runs the whole benchmark on three clusters with short
// rounds, so that it cannot rot: the real manager (built from this tree)
// against envtest, the simulated peers, every phase, the table, the CSV and
// the report written into a document.
func TestSmallFleet(t *testing.T) {
	assets := envtestAssets(t)
	t.Setenv("KUBEBUILDER_ASSETS", assets)
	dir := t.TempDir()
	manager := filepath.Join(dir, "manager")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", manager, "./cmd/manager")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, out)
	}
	doc := filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(doc, []byte("# Benchmarks\n\n"+docBegin+"\n"+docEnd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join(dir, "fleet.csv")

	var out, log bytes.Buffer
	err := run([]string{"-manager", manager, "-crds", filepath.Join("..", "..", "config", "crd", "bases"),
		"-clusters", "3", "-round", "1s", "-window", "3s", "-warmup", "2s", "-unready", "3", "-unready-spread", "1s",
		"-timeout", "4m", "-phase-timeout", "90s", "-csv", csvPath, "-doc", doc}, &out, &log)
	t.Logf("log:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
	table := out.String()
	for _, row := range []string{"| | N=3 |", "| clusters x peers | 3 x 2 |", "| API requests/min, steady |", "| by method | GET ",
		"| GETs/min around the cache", "| peer summaries read/min", "| manager CPU, steady |", "| manager RSS",
		"| pod unready to out of the client list by IP: p50, p99, max |", "(3 pods over 1s)",
		"| spec change to new pod template: p50, p99, max |", "(3 clusters)", "fleetbench -manager"} {
		if !strings.Contains(table, row) {
			t.Errorf("the table lacks %q:\n%s", row, table)
		}
	}
	written, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(written), docBegin+"\n"+table) {
		t.Errorf("the document does not hold the table:\n%s", written)
	}

	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 2 || strings.Join(records[0], ",") != strings.Join(csvColumns, ",") {
		t.Fatalf("CSV %v, want the header and one row", records)
	}
	row := map[string]string{}
	for i, c := range csvColumns {
		row[c] = records[1][i]
	}
	number := func(col string) float64 {
		v, err := strconv.ParseFloat(row[col], 64)
		if err != nil {
			t.Errorf("column %s: %q is not a number", col, row[col])
		}
		return v
	}
	for _, col := range []string{"setup_s", "window_s", "summaries_per_min", "rss_mib", "peak_rss_mib", "unready_p50_s", "roll_p50_s", "roll_span_s"} {
		if v := number(col); v <= 0 {
			t.Errorf("column %s is %v, want more than 0", col, v)
		}
	}
	for _, col := range []string{"requests_per_min", "get_per_min", "put_per_min", "failed_per_min", "around_cache_gets_per_min", "cpu_cores"} {
		if v := number(col); v < 0 {
			t.Errorf("column %s is %v", col, v)
		}
	}
	if row["clusters"] != "3" || row["unready_n"] != "3" || row["roll_n"] != "3" {
		t.Errorf("clusters %s, unready pods %s, rolled clusters %s; want 3 each", row["clusters"], row["unready_n"], row["roll_n"])
	}
}

// envtestAssets is KUBEBUILDER_ASSETS, or what hack/envtest-binaries.sh
// finds or builds.
func envtestAssets(t *testing.T) string {
	if a := os.Getenv("KUBEBUILDER_ASSETS"); a != "" {
		return a
	}
	out, err := exec.Command(filepath.Join("..", "..", "hack", "envtest-binaries.sh")).Output()
	if err != nil {
		t.Fatalf("KUBEBUILDER_ASSETS is not set and hack/envtest-binaries.sh failed: %v", err)
	}
	return strings.TrimSpace(string(out))
}
