package client

import "github.com/taskhook/taskhook/api/wire"

// The contract's constants, under the client's names so that a program needs
// no import but this package. Their values are api/wire's.

// Task statuses.
const (
	StatusWorking       = wire.StatusWorking
	StatusInputRequired = wire.StatusInputRequired
	StatusCompleted     = wire.StatusCompleted
	StatusFailed        = wire.StatusFailed
	StatusCancelled     = wire.StatusCancelled
)

// Input request kinds and displays.
const (
	KindAsk           = wire.KindAsk
	KindAuthorization = wire.KindAuthorization

	DisplayConfirmation = wire.DisplayConfirmation
	DisplaySelect       = wire.DisplaySelect
	DisplayText         = wire.DisplayText
)

// Answer actions (Answer.Action; none accepts) and the channels an answer
// comes through (InputResponse.Via).
const (
	ActionAccept  = wire.ActionAccept
	ActionDecline = wire.ActionDecline
	ActionCancel  = wire.ActionCancel

	ViaAPI        = wire.ViaAPI
	ViaConsole    = wire.ViaConsole
	ViaAnswerLink = wire.ViaAnswerLink
	ViaSlack      = wire.ViaSlack
	ViaMCP        = wire.ViaMCP
	ViaA2A        = wire.ViaA2A
	ViaSignIn     = wire.ViaSignIn

	// AnsweredByAnswerLink is the AnsweredBy of an answer given through an
	// answer URL, which names no principal.
	AnsweredByAnswerLink = wire.AnsweredByAnswerLink
)

// Session statuses.
const (
	SessionActive    = wire.SessionActive
	SessionCancelled = wire.SessionCancelled
)

// Hook statuses, and why a hook closed.
const (
	HookOpen   = wire.HookOpen
	HookClosed = wire.HookClosed

	CloseReasonClosed           = wire.CloseReasonClosed
	CloseReasonExpired          = wire.CloseReasonExpired
	CloseReasonTaskTerminal     = wire.CloseReasonTaskTerminal
	CloseReasonSessionCancelled = wire.CloseReasonSessionCancelled
)

// Signature schemes a hook can require of the posts it takes.
const (
	VerifyStandardWebhooks = wire.VerifyStandardWebhooks
	VerifyGitHub           = wire.VerifyGitHub
	VerifyStripe           = wire.VerifyStripe
	VerifySlack            = wire.VerifySlack
	VerifyHMACSHA256       = wire.VerifyHMACSHA256
)

// Event types.
const (
	EventSessionCreated         = wire.EventSessionCreated
	EventSessionCancelled       = wire.EventSessionCancelled
	EventTaskCreated            = wire.EventTaskCreated
	EventTaskProgress           = wire.EventTaskProgress
	EventTaskMessage            = wire.EventTaskMessage
	EventTaskStatus             = wire.EventTaskStatus
	EventTaskTerminal           = wire.EventTaskTerminal
	EventInputRequested         = wire.EventInputRequested
	EventInputResolved          = wire.EventInputResolved
	EventAuthorizationRequired  = wire.EventAuthorizationRequired
	EventAuthorizationCompleted = wire.EventAuthorizationCompleted
	EventTaskReleased           = wire.EventTaskReleased
	EventHookReceived           = wire.EventHookReceived
)

// Error codes of the contract.
const (
	CodeInvalidJSON         = wire.CodeInvalidJSON
	CodeInvalidRequest      = wire.CodeInvalidRequest
	CodeUnauthorized        = wire.CodeUnauthorized
	CodeNotFound            = wire.CodeNotFound
	CodeRequesterNotAllowed = wire.CodeRequesterNotAllowed // 403: the token may not act for that requester (delegate scope or act_for needed)
	CodeTaskTerminal        = wire.CodeTaskTerminal
	CodeNotInputRequired    = wire.CodeNotInputRequired
	CodeUnknownRequest      = wire.CodeUnknownRequest
	CodeInputConflict       = wire.CodeInputConflict
	CodeIdempotencyConflict = wire.CodeIdempotencyConflict
	CodeSessionNotActive    = wire.CodeSessionNotActive
	CodeHookClosed          = wire.CodeHookClosed
	CodeInputClosed         = wire.CodeInputClosed
	CodeSignatureInvalid    = wire.CodeSignatureInvalid
	CodePayloadTooLarge     = wire.CodePayloadTooLarge
	CodeRequestTimeout      = wire.CodeRequestTimeout
	CodeRateLimited         = wire.CodeRateLimited
	CodeStoreUnavailable    = wire.CodeStoreUnavailable
	CodeTooManyTasks        = wire.CodeTooManyTasks     // 429: the session holds as many live tasks as it may
	CodeTooManyEndpoints    = wire.CodeTooManyEndpoints // 409: the session or task holds as many notification endpoints as it may
	CodeTaskNotTerminal     = wire.CodeTaskNotTerminal  // 409: release of a task that has not ended
	CodeTaskTooLarge        = wire.CodeTaskTooLarge     // 413: the task record would be above the size limit
	CodeToolNameTaken       = wire.CodeToolNameTaken    // 409: another principal publishes a tool by that name
	CodeOverloaded          = wire.CodeOverloaded
	CodeInternal            = wire.CodeInternal
)
