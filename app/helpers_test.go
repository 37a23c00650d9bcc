package app_test

import (
	"errors"

	"github.com/taskhook/taskhook/client"
)

func asError(err error, target **client.Error) bool { return errors.As(err, target) }
