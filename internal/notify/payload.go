package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
)

// request is one webhook call: where, with which headers, what body.
type request struct {
	url     string
	headers map[string]string
	body    []byte
}

// webhook builds the request a provider of a chat or webhook type sends
// for e, with the same JSON as notification-controller's notifier of that
// type. Where Flux ranges over a map (metadata fields), ferry sorts by key
// so that the same event gives the same bytes.
func webhook(p *Provider, c *credentials, e *Event) (*request, error) {
	r := &request{url: c.address, headers: map[string]string{}}
	var payload any
	switch p.Type {
	case TypeSlack:
		payload = slackPayload(e, p.Channel, c.username, true)
		if c.token != "" {
			r.headers["Authorization"] = "Bearer " + c.token
		}
	case TypeDiscord:
		// Discord takes Slack's payload at the webhook's /slack path.
		u, err := url.Parse(c.address)
		if err != nil {
			return nil, fmt.Errorf("%s: the address is not a URL", p.ID())
		}
		if !strings.HasSuffix(c.address, "/slack") {
			u.Path = path.Join(u.Path, "slack")
			r.url = u.String()
		}
		payload = slackPayload(e, "", c.username, false)
	case TypeMSTeams:
		u, err := url.Parse(c.address)
		if err != nil {
			return nil, fmt.Errorf("%s: the address is not a URL", p.ID())
		}
		// Office 365 connectors (*.webhook.office.com) take the old
		// MessageCard; Workflows and the rest an Adaptive Card.
		if strings.HasSuffix(u.Hostname(), ".webhook.office.com") {
			payload = teamsMessageCard(e)
		} else {
			payload = teamsAdaptiveCard(e)
		}
	case TypeGoogleChat:
		payload = googleChatPayload(e)
	case TypeGeneric, TypeGenericHMAC:
		payload = wire(e)
		r.headers["gotk-component"] = e.ReportingController
		for k, v := range c.headers {
			r.headers[k] = v
		}
	case TypeAlertmanager:
		payload = alertmanagerPayload(e)
		if c.token != "" {
			r.headers["Authorization"] = "Bearer " + c.token
		}
	default:
		return nil, fmt.Errorf("%s: ferry does not send to providers of type %q", p.ID(), p.Type)
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the payload: %w", p.ID(), err)
	}
	r.body = body
	if p.Type == TypeGenericHMAC {
		if c.token == "" {
			return nil, fmt.Errorf("%s: generic-hmac needs the token key of its secretRef as the HMAC key", p.ID())
		}
		r.headers["X-Signature"] = "sha256=" + sign(body, []byte(c.token))
	}
	if p.Type == TypeAlertmanager && c.username != "" && c.password != "" {
		r.headers["Authorization"] = basicAuth(c.username, c.password)
	}
	return r, nil
}

// sign is the hex HMAC-SHA256 of body with key, as generic-hmac's
// X-Signature carries it.
func sign(body, key []byte) string {
	h := hmac.New(sha256.New, key)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// objName is how Flux's chat notifiers title an event: kind/name.namespace,
// the kind lower-cased.
func objName(e *Event) string {
	o := e.InvolvedObject
	return fmt.Sprintf("%s/%s.%s", strings.ToLower(o.Kind), o.Name, o.Namespace)
}

// sortedKeys are the keys of the event's metadata in order.
func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// wireEvent is the Event as Flux's event API encodes it: the timestamp in
// UTC to the second (metav1.Time).
type wireEvent struct {
	InvolvedObject      ObjectReference   `json:"involvedObject"`
	Severity            string            `json:"severity"`
	Timestamp           string            `json:"timestamp"`
	Message             string            `json:"message"`
	Reason              string            `json:"reason"`
	Metadata            map[string]string `json:"metadata,omitempty"`
	ReportingController string            `json:"reportingController"`
	ReportingInstance   string            `json:"reportingInstance,omitempty"`
}

func wire(e *Event) wireEvent {
	return wireEvent{
		InvolvedObject:      e.InvolvedObject,
		Severity:            e.Severity,
		Timestamp:           e.Timestamp.UTC().Format(time.RFC3339),
		Message:             e.Message,
		Reason:              e.Reason,
		Metadata:            e.Metadata,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
}

// Slack's incoming webhook payload with one legacy attachment, as
// notification-controller's slack (and discord) notifier sends it.
type slackMessage struct {
	Channel     string            `json:"channel"`
	Username    string            `json:"username"`
	IconURL     string            `json:"icon_url"`
	IconEmoji   string            `json:"icon_emoji"`
	Text        string            `json:"text,omitempty"`
	Attachments []slackAttachment `json:"attachments,omitempty"`
}

type slackAttachment struct {
	Fallback   string       `json:"fallback"`
	Color      string       `json:"color"`
	AuthorName string       `json:"author_name"`
	Text       string       `json:"text"`
	MrkdwnIn   []string     `json:"mrkdwn_in"`
	Fields     []slackField `json:"fields"`
}

type slackField struct {
	Title string `json:"title"`
	Value string `json:"value"`
	Short bool   `json:"short"`
}

// slackPayload: the username defaults to the reporting controller; the
// color is good, or danger for an error; the metadata are fields; slack
// (not discord) sets a fallback of the title and the first line.
func slackPayload(e *Event, channel, username string, fallback bool) slackMessage {
	if username == "" {
		username = e.ReportingController
	}
	color := "good"
	if e.Severity == SeverityError {
		color = "danger"
	}
	fields := make([]slackField, 0, len(e.Metadata))
	for _, k := range sortedKeys(e.Metadata) {
		fields = append(fields, slackField{Title: k, Value: e.Metadata[k]})
	}
	a := slackAttachment{
		Color:      color,
		AuthorName: objName(e),
		Text:       e.Message,
		MrkdwnIn:   []string{"text"},
		Fields:     fields,
	}
	if fallback {
		first, _, _ := strings.Cut(e.Message, "\n")
		a.Fallback = objName(e) + ": " + first
	}
	return slackMessage{Channel: channel, Username: username, Attachments: []slackAttachment{a}}
}

// The Adaptive Card (schema 1.4, the highest Teams takes) that
// notification-controller posts to a Teams Workflows webhook.
type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string    `json:"contentType"`
	Content     teamsCard `json:"content"`
}

type teamsCard struct {
	Schema  string         `json:"$schema"`
	Type    string         `json:"type"`
	Version string         `json:"version"`
	Body    []teamsElement `json:"body"`
	MSTeams teamsWidth     `json:"msteams"`
}

type teamsWidth struct {
	Width string `json:"width,omitempty"`
}

// teamsElement is a Container, TextBlock or FactSet: the fields of the
// one it is, flattened.
type teamsElement struct {
	Type string `json:"type"`
	*teamsContainer
	*teamsTextBlock
	*teamsFactSet
}

type teamsContainer struct {
	Items []teamsElement `json:"items,omitempty"`
}

type teamsTextBlock struct {
	Text   string `json:"text,omitempty"`
	Size   string `json:"size,omitempty"`
	Weight string `json:"weight,omitempty"`
	Color  string `json:"color,omitempty"`
	Wrap   bool   `json:"wrap,omitempty"`
}

type teamsFactSet struct {
	Facts []teamsFact `json:"facts,omitempty"`
}

type teamsFact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

// teamsAdaptiveCard: the title, the message (attention color for an
// error), and the metadata as facts, summary first and the rest by key.
func teamsAdaptiveCard(e *Event) teamsMessage {
	msg := &teamsTextBlock{Text: e.Message, Wrap: true}
	if e.Severity == SeverityError {
		msg.Color = "attention"
	}
	facts := make([]teamsFact, 0, len(e.Metadata))
	if s, ok := e.Metadata["summary"]; ok {
		facts = append(facts, teamsFact{Title: "summary", Value: s})
	}
	for _, k := range sortedKeys(e.Metadata) {
		if k != "summary" {
			facts = append(facts, teamsFact{Title: k, Value: e.Metadata[k]})
		}
	}
	return teamsMessage{
		Type: "message",
		Attachments: []teamsAttachment{{
			ContentType: "application/vnd.microsoft.card.adaptive",
			Content: teamsCard{
				Schema:  "http://adaptivecards.io/schemas/adaptive-card.json",
				Type:    "AdaptiveCard",
				Version: "1.4",
				MSTeams: teamsWidth{Width: "Full"},
				Body: []teamsElement{{
					Type: "Container",
					teamsContainer: &teamsContainer{Items: []teamsElement{
						{Type: "TextBlock", teamsTextBlock: &teamsTextBlock{Text: objName(e), Size: "large", Weight: "bolder", Wrap: true}},
						{Type: "TextBlock", teamsTextBlock: msg},
						{Type: "FactSet", teamsFactSet: &teamsFactSet{Facts: facts}},
					}},
				}},
			},
		}},
	}
}

// The Office 365 connector MessageCard, for *.webhook.office.com
// addresses.
type teamsLegacyCard struct {
	Type       string               `json:"@type"`
	Context    string               `json:"@context"`
	ThemeColor string               `json:"themeColor"`
	Summary    string               `json:"summary"`
	Sections   []teamsLegacySection `json:"sections"`
}

type teamsLegacySection struct {
	ActivityTitle    string             `json:"activityTitle"`
	ActivitySubtitle string             `json:"activitySubtitle"`
	Facts            []teamsLegacyField `json:"facts"`
}

type teamsLegacyField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func teamsMessageCard(e *Event) teamsLegacyCard {
	facts := make([]teamsLegacyField, 0, len(e.Metadata))
	for _, k := range sortedKeys(e.Metadata) {
		facts = append(facts, teamsLegacyField{Name: k, Value: e.Metadata[k]})
	}
	color := "0076D7"
	if e.Severity == SeverityError {
		color = "FF0000"
	}
	return teamsLegacyCard{
		Type:       "MessageCard",
		Context:    "http://schema.org/extensions",
		ThemeColor: color,
		Summary:    objName(e),
		Sections:   []teamsLegacySection{{ActivityTitle: e.Message, ActivitySubtitle: objName(e), Facts: facts}},
	}
}

// Google Chat's card message (the cards v1 layout notification-controller
// still posts), its null fields included.
type googleChatMessage struct {
	Cards []googleChatCard `json:"cards"`
}

type googleChatCard struct {
	Header   googleChatHeader    `json:"header"`
	Sections []googleChatSection `json:"sections"`
}

type googleChatHeader struct {
	Title      string  `json:"title"`
	Subtitle   string  `json:"subtitle"`
	ImageURL   *string `json:"imageUrl"`
	ImageStyle *string `json:"imageStyle"`
}

type googleChatSection struct {
	Header  string             `json:"header"`
	Widgets []googleChatWidget `json:"widgets"`
}

type googleChatWidget struct {
	TextParagraph *googleChatText     `json:"textParagraph"`
	KeyValue      *googleChatKeyValue `json:"keyValue"`
}

type googleChatText struct {
	Text string `json:"text"`
}

type googleChatKeyValue struct {
	TopLabel         string  `json:"topLabel"`
	Content          string  `json:"content"`
	ContentMultiline bool    `json:"contentMultiline"`
	BottomLabel      *string `json:"bottomLabel"`
	Icon             *string `json:"icon"`
}

// googleChatPayload: the title and the reporting controller in the
// header, the message (red for an error), then the metadata as key-values.
func googleChatPayload(e *Event) googleChatMessage {
	text := e.Message
	if e.Severity == SeverityError {
		text = fmt.Sprintf("<font color=\"#ff0000\">%s</font>", e.Message)
	}
	sections := []googleChatSection{{Widgets: []googleChatWidget{{TextParagraph: &googleChatText{Text: text}}}}}
	if len(e.Metadata) > 0 {
		kv := make([]googleChatWidget, 0, len(e.Metadata))
		for _, k := range sortedKeys(e.Metadata) {
			kv = append(kv, googleChatWidget{KeyValue: &googleChatKeyValue{TopLabel: k, Content: e.Metadata[k]}})
		}
		sections = append(sections, googleChatSection{Widgets: kv})
	}
	return googleChatMessage{Cards: []googleChatCard{{
		Header:   googleChatHeader{Title: objName(e), Subtitle: e.ReportingController},
		Sections: sections,
	}}}
}

// An alert of Alertmanager's API v2 (POST /api/v2/alerts takes a list).
type alertmanagerAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    string            `json:"startsAt"`
	EndsAt      string            `json:"endsAt"`
}

// alertmanagerPayload: the metadata are labels, but summary, which is an
// annotation beside the message; then alertname
// Flux<Kind><Reason title-cased>, severity, reason, kind, name, namespace
// and reportingcontroller. endsAt is the zero time as Flux sends it (its
// omitempty does not omit a struct), which Alertmanager reads as unset.
func alertmanagerPayload(e *Event) []alertmanagerAlert {
	annotations := map[string]string{"message": e.Message}
	labels := maps.Clone(e.Metadata)
	if labels == nil {
		labels = map[string]string{}
	}
	if s, ok := labels["summary"]; ok {
		annotations["summary"] = s
		delete(labels, "summary")
	}
	o := e.InvolvedObject
	labels["alertname"] = "Flux" + o.Kind + titleCase(e.Reason)
	labels["severity"] = e.Severity
	labels["reason"] = e.Reason
	labels["kind"] = o.Kind
	labels["name"] = o.Name
	labels["namespace"] = o.Namespace
	labels["reportingcontroller"] = e.ReportingController
	return []alertmanagerAlert{{
		Status:      "firing",
		Labels:      labels,
		Annotations: annotations,
		StartsAt:    e.Timestamp.UTC().Format(time.RFC3339),
		EndsAt:      time.Time{}.Format(time.RFC3339),
	}}
}

// titleCase is what golang.org/x/text/cases.Title does to a reason: each
// word's first letter upper-cased and the rest lower-cased, so
// ReconciliationSucceeded reads Reconciliationsucceeded.
func titleCase(s string) string {
	var b strings.Builder
	start := true
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'':
			if start {
				b.WriteRune(unicode.ToTitle(r))
			} else {
				b.WriteRune(unicode.ToLower(r))
			}
			start = false
		default:
			b.WriteRune(r)
			start = true
		}
	}
	return b.String()
}

func basicAuth(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}
