// Package layers holds the test that keeps the module's folders layered: it
// derives the import graph with `go list` and fails when a package imports
// one on a higher floor (the floors table in layers_test.go, as README's
// layout section describes), or when folders import each other.
package layers
