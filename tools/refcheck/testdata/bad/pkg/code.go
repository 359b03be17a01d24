// Package pkg cites gone.md, docs/guide.md#gone, testdata/missing.txt,
// shared/docs/notes.md and ../shared/testdata/data.json, and a section
// by number: §3.2.
package pkg

// A path in a string is not a citation: code that uses it is tested.
var name = "notes.md"
