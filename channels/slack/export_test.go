package slack

// EchoBytes is echoBytes, for the tests of package slack_test.
var EchoBytes = echoBytes
