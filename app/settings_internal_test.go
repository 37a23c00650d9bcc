package app

import (
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// Every default -h shows that is a value (not words in parentheses) is one
// the variable takes.
func TestSettingDefaultsAreValues(t *testing.T) {
	for _, s := range settings(&Config{}) {
		if s.def == "" || strings.HasPrefix(s.def, "(") || strings.Contains(s.def, " ") {
			continue
		}
		if err := s.set(s.def); err != nil {
			t.Errorf("%s: the default %q is refused: %v", s.env, s.def, err)
		}
	}
}

// Every setting fills a field of a type set parses: a new row of another
// type would otherwise panic only when somebody sets its variable.
func TestEverySettingHasAParser(t *testing.T) {
	for _, s := range settings(&Config{}) {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: %v", s.env, r)
				}
			}()
			_ = s.set("") // the value may be refused; the type must not be
		}()
	}
}

// The README's configuration table names the variables of -h, no more and
// no fewer, with the same defaults.
func TestReadmeConfigurationMatchesHelp(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n## Configuration\n")
	section, _, _ = strings.Cut(section, "\n## ")
	name := regexp.MustCompile("`(TASKHOOK_[A-Z0-9_]+)`")
	inReadme := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`TASKHOOK_") {
			continue
		}
		var names []string
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			names = append(names, m[1])
		}
		def := strings.ReplaceAll(strings.TrimSpace(cells[2]), "`", "")
		defs := strings.Split(def, ", ")
		for i, n := range names {
			switch {
			case len(defs) == len(names):
				inReadme[n] = defs[i]
			case def == "":
				inReadme[n] = ""
			default:
				t.Errorf("README: %s: cannot tell the defaults of %v apart", def, names)
			}
		}
	}
	for _, s := range settings(&Config{}) {
		def, ok := inReadme[s.env]
		switch {
		case !ok:
			t.Errorf("README's configuration table has no %s", s.env)
		case def != s.def:
			t.Errorf("%s: README says the default is %q, -h %q", s.env, def, s.def)
		}
		delete(inReadme, s.env)
	}
	for n := range inReadme {
		t.Errorf("README's configuration table names %s, which no setting reads", n)
	}
}

// The version of a build without one set at link time: the module's, else
// dev and the commit it was built from, else dev.
func TestStampedVersion(t *testing.T) {
	for _, c := range []struct {
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260301120000-0123456789ab+dirty"}}, "v0.0.0-20260301120000-0123456789ab+dirty"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"},
		}}, "dev-0123456789ab-dirty"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	} {
		if got := stampedVersion(&c.info); got != c.want {
			t.Errorf("%+v: %q, want %q", c.info, got, c.want)
		}
	}
}

// A name is matched to the setting one typo away, a swap of two letters
// included, and to none when nothing is near.
func TestClosestSetting(t *testing.T) {
	names := []string{"TASKHOOK_REDIS_URL", "TASKHOOK_REDIS_PREFIX", "TASKHOOK_ADDR", "TASKHOOK_LOG_LEVEL"}
	for in, want := range map[string]string{
		"TASKHOOK_REDIS_ULR":  "TASKHOOK_REDIS_URL",
		"TASKHOOK_REDISURL":   "TASKHOOK_REDIS_URL",
		"TASKHOOK_ADR":        "TASKHOOK_ADDR",
		"TASKHOOK_LOGLEVEL":   "TASKHOOK_LOG_LEVEL",
		"TASKHOOK_PORT":       "",
		"TASKHOOK_REDIS_HOST": "",
	} {
		if got := closest(in, names); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}
