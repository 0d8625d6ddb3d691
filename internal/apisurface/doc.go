// Package apisurface holds only a test: it counts the exported identifiers of
// the module's public packages and fails when there are more than the issue
// 23 budget allows (see apisurface_test.go).
package apisurface
