// Package taskhook holds no code: the service is the packages below this
// folder, and README.md's Layout section says what each owns and may import.
// The import-rules test in this folder keeps that section true.
package taskhook
