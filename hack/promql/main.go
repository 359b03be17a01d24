// Command promql reads PromQL expressions and prints, for each, the metric
// names and label names it references, as the Prometheus parser sees them.
// The tests of the monitoring kit (test/monitoring) use it to check every
// alert rule and dashboard query against what the NameServer and the
// operator really expose, without putting the Prometheus module into the
// project's own go.mod.
//
// Input on stdin is a JSON array of {"id": "...", "expr": "..."}; output on
// stdout is a JSON array of Reference in the same order. An expression that
// does not parse gets its error in the output, and the command exits with
// status 1 after printing everything; bad input exits with status 2.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Stdin, os.Stdout, os.Stderr))
}

func run(in io.Reader, out, errOut io.Writer) int {
	var exprs []Expr
	dec := json.NewDecoder(in)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&exprs); err != nil {
		fmt.Fprintf(errOut, "promql: reading expressions from stdin: %v\n", err)
		return 2
	}
	refs := make([]Reference, len(exprs))
	status := 0
	for i, e := range exprs {
		refs[i] = References(e)
		if refs[i].Error != "" {
			status = 1
		}
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(refs); err != nil {
		fmt.Fprintf(errOut, "promql: writing the result: %v\n", err)
		return 2
	}
	return status
}
