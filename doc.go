// Package ratelab is the module's root, which holds no code of its own: its
// one test, readme_test.go, holds README.md and docs/ to what the commands
// print today.
//
// The library a program imports is package strategies (with batch, engine,
// provider, sharedlimit, mock and mock/mocktest); docs/architecture.md maps
// every package.
package ratelab
