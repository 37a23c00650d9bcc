package app

import "runtime/debug"

// Version is what /v1/info and -version report. The linker sets it
// (-ldflags "-X github.com/taskhook/taskhook/app.Version=v1.2.3", as make
// build does); else it is the version the go command stamped into the
// binary: the module's tag or pseudo-version, or the commit it was built
// from; else "dev" (go run, tests).
var Version = "dev"

func init() {
	if Version == "dev" {
		if info, ok := debug.ReadBuildInfo(); ok {
			Version = stampedVersion(info)
		}
	}
}

// stampedVersion is the version of a build's info: the main module's, or
// dev and the commit (dirty when it had uncommitted changes), or dev.
func stampedVersion(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "dev"
	}
	return "dev-" + rev + dirty
}
