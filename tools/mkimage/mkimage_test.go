package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFinalStage(t *testing.T) {
	const build = "FROM golang:1.26 AS build\nRUN make\n"
	for _, tc := range []struct {
		name, text string
		want       *stage
		err        string
	}{
		{name: "the project's shape", text: build + "# comment\nFROM scratch\nCOPY --from=build /out/a \\\n  /out/b /\nUSER 65532:65532\nENTRYPOINT [\"/a\"]\n",
			want: &stage{from: "scratch", copies: []copyFile{{"/out/a", "/a"}, {"/out/b", "/b"}}, user: "65532:65532", entrypoint: []string{"/a"}}},
		{name: "into a directory", text: "FROM scratch\nCOPY --from=build /out/a /usr/bin/\nENTRYPOINT [\"/usr/bin/a\", \"-v\"]\n",
			want: &stage{from: "scratch", copies: []copyFile{{"/out/a", "/usr/bin/a"}}, entrypoint: []string{"/usr/bin/a", "-v"}}},
		{name: "not scratch", text: build + "FROM debian\nCOPY --from=build /out/a /\n", err: "FROM scratch only"},
		{name: "an instruction not packed", text: build + "FROM scratch\nCOPY --from=build /out/a /\nENV X=1\n", err: `"ENV X=1"`},
		{name: "shell-form entrypoint", text: "FROM scratch\nCOPY --from=build /out/a /\nENTRYPOINT /a\n", err: "exec form"},
		{name: "copy from the context", text: "FROM scratch\nCOPY a /\n", err: "without --from"},
		{name: "copy with a pattern", text: "FROM scratch\nCOPY --from=build /out/* /\n", err: "pattern"},
		{name: "copy to a file", text: "FROM scratch\nCOPY --from=build /out/a /b\n", err: "not a directory"},
		{name: "copy option", text: "FROM scratch\nCOPY --from=build --chmod=644 /out/a /\n", err: "--chmod"},
		{name: "no files", text: "FROM scratch\nUSER 1\n", err: "copies no files"},
		{name: "no FROM", text: "RUN x\n", err: "no FROM"},
		{name: "dangling continuation", text: "FROM scratch\nCOPY --from=b /out/a \\", err: "continuation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := finalStage(tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.from != tc.want.from || got.user != tc.want.user || !slices.Equal(got.copies, tc.want.copies) || !slices.Equal(got.entrypoint, tc.want.entrypoint) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// stubFiles writes small files standing in for binaries.
func stubFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("stub "+n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTheProjectDockerfile packs the repository's Dockerfile with stub
// binaries and checks the tarball, read back, against its final stage.
func TestTheProjectDockerfile(t *testing.T) {
	dir := t.TempDir()
	stubFiles(t, dir, "manager", "namesrv", "nsadmin", "kubectl-nsc")
	out := filepath.Join(dir, "image.tar")
	tags := []string{"kube-namesrv/kube-namesrv:v0.0.0-test", "kube-namesrv/kube-namesrv:v0.0.0-other"}
	args := []string{"-o", out, "-dockerfile", "../../Dockerfile", "-root", "/out=" + dir, "-arch", "amd64"}
	for _, tag := range tags {
		args = append(args, "-tag", tag)
	}
	if err := run(args); err != nil {
		t.Fatal(err)
	}
	s, err := specFromFlags("../../Dockerfile", []string{"/out=" + dir}, nil, nil, "", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if s.user != "65532:65532" || !slices.Equal(s.entrypoint, []string{"/manager"}) || len(s.files) != 4 {
		t.Errorf("the Dockerfile's final stage read as %+v", s)
	}
	// The same tarball fails against another image's description.
	for _, bad := range []spec{
		{files: s.files, user: "0", entrypoint: s.entrypoint, arch: "amd64"},
		{files: s.files, user: s.user, entrypoint: []string{"/namesrv"}, arch: "amd64"},
		{files: s.files[:3], user: s.user, entrypoint: s.entrypoint, arch: "amd64"},
		{files: append(slices.Clone(s.files), file{dst: "/extra", src: filepath.Join(dir, "manager")}), user: s.user, entrypoint: s.entrypoint, arch: "amd64"},
		{files: s.files, user: s.user, entrypoint: s.entrypoint, arch: "arm64"},
	} {
		if err := verify(out, tags, bad); err == nil {
			t.Errorf("verify passed against %+v", bad)
		}
	}
}

func TestExplicitImage(t *testing.T) {
	dir := t.TempDir()
	stubFiles(t, dir, "pause")
	out := filepath.Join(dir, "pause.tar")
	if err := run([]string{"-o", out, "-tag", "e2e/pause:1", "-file", "/pause=" + filepath.Join(dir, "pause"), "-entrypoint", "/pause"}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-o", out, "-tag", "e2e/pause:1", "-file", "/pause=" + filepath.Join(dir, "missing"), "-entrypoint", "/pause"},
		{"-o", out, "-tag", "e2e/pause:1", "-file", "pause=x", "-entrypoint", "/pause"},
		{"-o", out, "-tag", "e2e/pause:1", "-file", "/pause=x"},
		{"-o", out, "-tag", "Not A Tag", "-file", "/pause=" + filepath.Join(dir, "pause"), "-entrypoint", "/pause"},
		{"-o", out, "-file", "/pause=" + filepath.Join(dir, "pause"), "-entrypoint", "/pause"},
		{"-o", out, "-tag", "a/b:c", "-dockerfile", "../../Dockerfile", "-root", "/elsewhere=" + dir},
		{"-o", out, "-tag", "a/b:c", "-dockerfile", "../../Dockerfile", "-root", "/out=" + dir, "-user", "0"},
	} {
		if err := run(args); err == nil {
			t.Errorf("mkimage %v succeeded", args)
		}
	}
}
