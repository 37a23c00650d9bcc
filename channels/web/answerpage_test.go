package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

// TestAnswerPageInBrowser opens an answer page from a task's answerUrl,
// clicks an option and sees the done page; the answer is the task's.
func TestAnswerPageInBrowser(t *testing.T) {
	tab := browser(t)
	srv := server(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	alice := srv.Client(t, "alice")

	_, task := apptest.SessionWithTask(t, ctx, alice, client.CreateTaskInput{Kind: "release", Label: "Release 2.4.0"})
	asked, err := alice.RequireInput(ctx, task.TaskID, []client.InputRequest{{
		RequestID: "publish", Prompt: "Publish release 2.4.0 to customers?",
		Options: []client.Choice{
			{ID: "publish", Label: "Publish", Style: "primary", Description: "tag v2.4.0 and announce"},
			{ID: "hold", Label: "Hold", Style: "danger"},
		},
		AllowFreeform: true,
	}})
	if err != nil {
		t.Fatal(err)
	}
	answerURL := asked.InputRequests[0].AnswerURL

	do(t, tab, "open the answer page",
		chromedp.Navigate(answerURL),
		chromedp.WaitVisible(chromedp.CSS(`button[name="optionId"][value="publish"]`)),
		chromedp.WaitVisible(chromedp.ID("answer-text")),
	)
	if got := eval[string](t, tab, `getComputedStyle(document.querySelector(".page-card")).borderTopLeftRadius`); got != "10px" {
		t.Fatalf("the stylesheet did not load under the page's policy (card radius %q)", got)
	}
	screenshot(t, tab, "answer-page.png")

	do(t, tab, "click Publish",
		chromedp.Click(chromedp.CSS(`button[name="optionId"][value="publish"]`)),
		chromedp.WaitVisible(chromedp.ID("answer-result")),
	)
	until(t, tab, "the done page", `document.getElementById("answer-result").textContent.includes("Answered.") &&
		document.querySelector(".answer strong").textContent === "Publish" && document.querySelector("form") === null`)
	if url := eval[string](t, tab, `location.href`); url != answerURL {
		t.Errorf("after the answer the page is %q, want the answer URL", url)
	}
	screenshot(t, tab, "answer-done.png")

	got, err := alice.GetTask(ctx, task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "working" || len(got.InputResponses) != 1 ||
		got.InputResponses[0] != (client.InputResponse{RequestID: "publish", OptionID: "publish"}) {
		t.Fatalf("after the click: status %s, answers %+v", got.Status, got.InputResponses)
	}

	// A reload shows the answer again and answers nothing.
	do(t, tab, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("answer-result")))
	again, err := alice.GetTask(ctx, task.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Revision != got.Revision {
		t.Errorf("a reload changed the task: revision %d, then %d", got.Revision, again.Revision)
	}
}
