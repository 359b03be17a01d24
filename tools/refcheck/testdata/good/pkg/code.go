// Package pkg cites docs/guide.md#stable and reads testdata/data.txt.
package pkg
