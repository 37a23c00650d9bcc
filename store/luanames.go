package store

// luaNames is Lua put in front of every script (before the prelude): the
// names Go and the scripts share, defined once in Go.
func luaNames() string { return "" }
