package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// stage is the final stage of a Dockerfile, in the subset mkimage packs:
// FROM scratch, COPY --from=<stage> of files into a directory, USER and an
// ENTRYPOINT in exec form. Anything else is refused, so that a Dockerfile
// that grows an instruction mkimage does not pack fails loudly instead of
// yielding an image that differs from it.
type stage struct {
	// from is the base image; only "scratch" is packed.
	from string
	// copies are the files of COPY --from instructions, in order.
	copies []copyFile
	user   string
	// entrypoint is the exec form's argv.
	entrypoint []string
}

// copyFile is one source of a COPY --from instruction.
type copyFile struct {
	// src is the path in the build stage; dst the path in the image.
	src, dst string
}

// finalStage parses the last stage of a Dockerfile.
func finalStage(text string) (*stage, error) {
	var (
		final *stage
		lines []string
		cur   strings.Builder
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || (l == "" && cur.Len() == 0) {
			continue
		}
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(l)
		lines = append(lines, strings.Join(strings.Fields(cur.String()), " "))
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the Dockerfile: %w", err)
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("the Dockerfile ends in a continuation line: %q", cur.String())
	}
	var stageLines []string
	for _, l := range lines {
		if keyword(l) == "FROM" {
			final, stageLines = &stage{}, nil
			f := strings.Fields(l)
			if len(f) < 2 {
				return nil, fmt.Errorf("FROM without an image: %q", l)
			}
			final.from = f[1]
			continue
		}
		stageLines = append(stageLines, l)
	}
	if final == nil {
		return nil, fmt.Errorf("the Dockerfile has no FROM")
	}
	if final.from != "scratch" {
		return nil, fmt.Errorf("the final stage is FROM %s; mkimage packs FROM scratch only", final.from)
	}
	for _, l := range stageLines {
		args := strings.TrimSpace(l[len(keyword(l)):])
		switch keyword(l) {
		case "COPY":
			files, err := parseCopy(args)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", l, err)
			}
			final.copies = append(final.copies, files...)
		case "USER":
			final.user = args
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(args), &final.entrypoint); err != nil || len(final.entrypoint) == 0 {
				return nil, fmt.Errorf("%q: mkimage packs the exec form of ENTRYPOINT only (a JSON array)", l)
			}
		default:
			return nil, fmt.Errorf("the final stage has %q, which mkimage does not pack", l)
		}
	}
	if len(final.copies) == 0 {
		return nil, fmt.Errorf("the final stage copies no files")
	}
	return final, nil
}

// keyword is a Dockerfile line's instruction, upper-cased.
func keyword(line string) string {
	k, _, _ := strings.Cut(line, " ")
	return strings.ToUpper(k)
}

// parseCopy reads `--from=<stage> <src>... <dir>/`: files copied from a
// build stage into a directory of the image.
func parseCopy(args string) ([]copyFile, error) {
	f := strings.Fields(args)
	var from bool
	var rest []string
	for _, a := range f {
		switch {
		case strings.HasPrefix(a, "--from="):
			from = true
		case strings.HasPrefix(a, "--"):
			return nil, fmt.Errorf("COPY option %s is not packed", a)
		default:
			rest = append(rest, a)
		}
	}
	if !from {
		return nil, fmt.Errorf("COPY without --from: mkimage packs files of a build stage only")
	}
	if len(rest) < 2 {
		return nil, fmt.Errorf("COPY needs a source and a destination")
	}
	dst := rest[len(rest)-1]
	if !strings.HasSuffix(dst, "/") {
		return nil, fmt.Errorf("COPY destination %s is not a directory (ends without /)", dst)
	}
	var out []copyFile
	for _, src := range rest[:len(rest)-1] {
		if strings.ContainsAny(src, "*?[") {
			return nil, fmt.Errorf("COPY source %s is a pattern; mkimage packs named files", src)
		}
		out = append(out, copyFile{src: src, dst: path.Join(dst, path.Base(src))})
	}
	return out, nil
}
