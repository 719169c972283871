package bump

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/ferry-ci/ferry/internal/actions"
	"github.com/ferry-ci/ferry/internal/images"
)

// PushedImages returns the image repositories a registry push event
// names, and where it came from: the file (--webhook-payload), or else
// the Actions run's event (read through event only then; nil outside
// Actions) when it is a repository_dispatch or workflow_dispatch whose
// payload names an "image" (or "images"). None (scan every policy) for
// any other event, such as a schedule.
func PushedImages(file string, event func() (*actions.Event, error)) ([]string, string, error) {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, "", fmt.Errorf("--webhook-payload: %w", err)
		}
		imgs, err := images.ParseWebhook(data)
		if err != nil {
			return nil, "", fmt.Errorf("--webhook-payload %s: %w", file, err)
		}
		return imgs, "the webhook", nil
	}
	ev, err := event()
	if err != nil || ev == nil || ev.Dispatch == nil {
		return nil, "", err
	}
	if ev.Dispatch.String("image") == "" && ev.Dispatch.ClientPayload["images"] == nil {
		return nil, "", nil // dispatched by hand, no image: scan everything
	}
	payload, err := json.Marshal(ev.Dispatch.ClientPayload)
	if err != nil {
		return nil, "", err
	}
	imgs, err := images.ParseWebhook(payload)
	if err != nil {
		return nil, "", fmt.Errorf("the %s event (GITHUB_EVENT_PATH): %w", ev.Name, err)
	}
	return imgs, "the " + ev.Name + " event", nil
}
