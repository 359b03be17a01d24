package authz

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// docRow is one row of the role table in docs/security.md:
// "| 100 | PUT_KV_CONFIG | admin |".
var docRow = regexp.MustCompile(`(?m)^\|\s*(\d+)\s*\|\s*([A-Z_]+)\s*\|\s*(read|broker|admin)\s*\|\s*$`)

// TestSecurityDocListsEveryCode keeps the role table operators read in
// step with Codes: every code with its name and role, nothing else.
func TestSecurityDocListsEveryCode(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := docRow.FindAllStringSubmatch(string(doc), -1)
	documented := map[int32]bool{}
	for _, r := range rows {
		code, err := strconv.ParseInt(r[1], 10, 32)
		if err != nil {
			t.Fatalf("row %q: %v", r[0], err)
		}
		c, ok := Lookup(int32(code))
		switch {
		case !ok:
			t.Errorf("docs/security.md lists code %s (%s), which has no role in Codes", r[1], r[2])
		case c.Name != r[2] || c.Role.String() != r[3]:
			t.Errorf("docs/security.md: code %s is %s needing %s; Codes says %s needing %s", r[1], r[2], r[3], c.Name, c.Role)
		case documented[c.Code]:
			t.Errorf("docs/security.md lists code %s twice", r[1])
		}
		documented[int32(code)] = true
	}
	for _, c := range Codes {
		if !documented[c.Code] {
			t.Errorf("docs/security.md does not list %s (%d) needing %s", c.Name, c.Code, c.Role)
		}
	}
}
