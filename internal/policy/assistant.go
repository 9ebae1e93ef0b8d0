package policy

import (
	"slices"
	"strings"

	"github.com/capgate/capgate/manifest"
)

// Outside assistants. A client may be another assistant rather than an agent of the person's
// (store.Client.Assistant): it gets only what the definitions document lets other
// assistants have. Personal context (memory, preferences, history, and the person's other
// personal data) reaches only an assistant whose provider neither stores nor trains on it;
// a sensitive data class reaches no outside assistant at all. A capability's data classes are
// what its manifest declares (data_classes); each is matched by its first label, so that
// "health.records" is health.

// Assistant is what a client is, as the decision reads it.
type Assistant string

// The kinds of client.
const (
	// NotAssistant is an agent of the person's: no data-class rule of this file applies.
	NotAssistant Assistant = ""
	// AssistantKeeps is another assistant whose provider stores or trains on what it is
	// given, or says nothing of it: no personal context, no sensitive class.
	AssistantKeeps Assistant = "keeps"
	// AssistantPrivate is another assistant whose provider neither stores nor trains on what
	// it is given: personal context, but no sensitive class.
	AssistantPrivate Assistant = "private"
)

// Assistants lists every kind of outside assistant.
var Assistants = []Assistant{AssistantKeeps, AssistantPrivate}

// personalClasses are the first labels of the personal-context data classes.
var personalClasses = []string{"personal", "memory", "preferences", "history", "profile", "contacts", "messages",
	"calendar", "email", "photos", "documents", "notes"}

// sensitiveClasses are the first labels of the sensitive data classes: the special
// categories of personal data, and what opens accounts or moves money.
var sensitiveClasses = []string{"sensitive", "health", "medical", "biometric", "genetic", "financial", "payment",
	"credentials", "government_id", "location", "religion", "political", "sexual", "ethnicity", "union", "criminal", "children"}

// classOf is the first label of a data class, folded to lower case.
func classOf(dc string) string {
	dc = strings.ToLower(dc)
	if i := strings.IndexByte(dc, '.'); i >= 0 {
		dc = dc[:i]
	}
	return dc
}

// AssistantRefusal says why a client of kind a may not call c, "" when it may: the first
// data class c declares that a's kind may not reach.
func AssistantRefusal(a Assistant, c *manifest.Capability) string {
	if a == NotAssistant || c == nil {
		return ""
	}
	for _, dc := range c.DataClasses {
		if slices.Contains(sensitiveClasses, classOf(dc)) {
			return "its data class " + dc + " is sensitive, which no outside assistant may reach"
		}
	}
	if a == AssistantPrivate {
		return ""
	}
	// Any other kind, a word this release does not know included, is AssistantKeeps.
	for _, dc := range c.DataClasses {
		if slices.Contains(personalClasses, classOf(dc)) {
			return "its data class " + dc + " is personal context, which only an assistant whose provider neither stores nor trains on data may reach"
		}
	}
	return ""
}
