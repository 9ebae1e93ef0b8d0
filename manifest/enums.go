package manifest

import "slices"

// Category places a capability in the manifest document's intent taxonomy.
type Category string

// The categories of the manifest document.
const (
	CategoryAppManagement      Category = "APP_MANAGEMENT"
	CategorySurfaceManagement  Category = "SURFACE_MANAGEMENT"
	CategoryElementInteraction Category = "ELEMENT_INTERACTION"
	CategoryTextInput          Category = "TEXT_INPUT"
	CategoryTextQuery          Category = "TEXT_QUERY"
	CategoryNavigation         Category = "NAVIGATION"
	CategoryStateQuery         Category = "STATE_QUERY"
	CategorySystem             Category = "SYSTEM"
	CategoryMediaPlayback      Category = "MEDIA_PLAYBACK"
	CategoryCommunication      Category = "COMMUNICATION"
	CategoryFileOperation      Category = "FILE_OPERATION"
	CategoryHardware           Category = "HARDWARE"
)

// Categories lists every Category in the manifest document's order.
var Categories = []Category{
	CategoryAppManagement, CategorySurfaceManagement, CategoryElementInteraction, CategoryTextInput,
	CategoryTextQuery, CategoryNavigation, CategoryStateQuery, CategorySystem, CategoryMediaPlayback,
	CategoryCommunication, CategoryFileOperation, CategoryHardware,
}

// Valid reports whether c is one of Categories.
func (c Category) Valid() bool { return slices.Contains(Categories, c) }

// SideEffect is the worst thing a capability can do to the system.
type SideEffect string

// The side effects of the manifest document, in caution order (see Rank).
const (
	SideEffectNone        SideEffect = "none"
	SideEffectRead        SideEffect = "read"
	SideEffectWrite       SideEffect = "write"
	SideEffectNetwork     SideEffect = "network"
	SideEffectDestructive SideEffect = "destructive"
	SideEffectSystem      SideEffect = "system"
)

// SideEffects lists every SideEffect from least to most cautious.
var SideEffects = []SideEffect{
	SideEffectNone, SideEffectRead, SideEffectWrite, SideEffectNetwork, SideEffectDestructive, SideEffectSystem,
}

// Valid reports whether s is one of SideEffects.
func (s SideEffect) Valid() bool { return slices.Contains(SideEffects, s) }

// Rank orders side effects for floors and widening: none < read < write < network <
// destructive < system. An unknown value ranks above system, so that it is never taken for
// a lesser effect.
func (s SideEffect) Rank() int {
	// A switch, not a search of SideEffects: every decision ranks its capability's effect
	// (TestRanksFollowTheirLists keeps the two in one order).
	switch s {
	case SideEffectNone:
		return 0
	case SideEffectRead:
		return 1
	case SideEffectWrite:
		return 2
	case SideEffectNetwork:
		return 3
	case SideEffectDestructive:
		return 4
	case SideEffectSystem:
		return 5
	}
	return len(SideEffects)
}

// SideEffectFromPlugin reads the plugin document's side effect words (NONE, READ, WRITE,
// DELETE, DEPLOY) as manifest side effects: DELETE is destructive and DEPLOY is system. It
// reports false for any other word.
func SideEffectFromPlugin(word string) (SideEffect, bool) {
	switch word {
	case "NONE":
		return SideEffectNone, true
	case "READ":
		return SideEffectRead, true
	case "WRITE":
		return SideEffectWrite, true
	case "DELETE":
		return SideEffectDestructive, true
	case "DEPLOY":
		return SideEffectSystem, true
	}
	return "", false
}

// AuthLevel is the minimum trust level a caller needs: public < user < privileged < system.
type AuthLevel string

// The auth levels of the manifest document, lowest first.
const (
	AuthPublic     AuthLevel = "public"
	AuthUser       AuthLevel = "user"
	AuthPrivileged AuthLevel = "privileged"
	AuthSystem     AuthLevel = "system"
)

// AuthLevels lists every AuthLevel from lowest to highest.
var AuthLevels = []AuthLevel{AuthPublic, AuthUser, AuthPrivileged, AuthSystem}

// Valid reports whether a is one of AuthLevels.
func (a AuthLevel) Valid() bool { return slices.Contains(AuthLevels, a) }

// Rank orders auth levels; an unknown level ranks above system, so nothing satisfies it.
func (a AuthLevel) Rank() int {
	// A switch, as SideEffect.Rank's.
	switch a {
	case AuthPublic:
		return 0
	case AuthUser:
		return 1
	case AuthPrivileged:
		return 2
	case AuthSystem:
		return 3
	}
	return len(AuthLevels)
}

// Risk is a capability's risk class.
type Risk string

// The risk classes, lowest first.
const (
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
)

// Risks lists every Risk from lowest to highest.
var Risks = []Risk{RiskLow, RiskMedium, RiskHigh}

// Valid reports whether r is one of Risks.
func (r Risk) Valid() bool { return slices.Contains(Risks, r) }

// RiskFor is the risk derived from a side effect when a capability declares none:
// none and read are low, write is medium, network, destructive and system are high.
func RiskFor(s SideEffect) Risk {
	switch s {
	case SideEffectNone, SideEffectRead:
		return RiskLow
	case SideEffectWrite:
		return RiskMedium
	}
	return RiskHigh
}

// Kind is the extension class of a manifest: a ceiling on its authority.
type Kind string

// The kinds of the plugin document. Only a capability provider may declare ports and capabilities.
const (
	KindCapabilityProvider Kind = "capability_provider"
	KindSkill              Kind = "skill"
	KindPlaybook           Kind = "playbook"
	KindControlPack        Kind = "control_pack"
)

// Kinds lists every Kind.
var Kinds = []Kind{KindCapabilityProvider, KindSkill, KindPlaybook, KindControlPack}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool { return slices.Contains(Kinds, k) }

// Idempotency says whether repeating a call repeats its effect.
type Idempotency string

// The idempotency values of the plugin document, least permissive first.
const (
	IdempotencyNone    Idempotency = "none"
	IdempotencyKeyed   Idempotency = "keyed"
	IdempotencyNatural Idempotency = "natural"
)

// Idempotencies lists every Idempotency.
var Idempotencies = []Idempotency{IdempotencyNone, IdempotencyKeyed, IdempotencyNatural}

// Valid reports whether i is one of Idempotencies.
func (i Idempotency) Valid() bool { return slices.Contains(Idempotencies, i) }

// Reversibility says whether a capability's effect can be undone.
type Reversibility string

// The reversibility values of the definitions document.
const (
	Reversible   Reversibility = "reversible"
	Compensable  Reversibility = "compensable"
	Irreversible Reversibility = "irreversible"
)

// Reversibilities lists every Reversibility.
var Reversibilities = []Reversibility{Reversible, Compensable, Irreversible}

// Valid reports whether r is one of Reversibilities.
func (r Reversibility) Valid() bool { return slices.Contains(Reversibilities, r) }

// Autonomy is how far an agent may go without the person: act, act_if_agreed, ask or handoff,
// from most to least autonomous.
type Autonomy string

// The autonomy values of the definitions document, most autonomous first.
const (
	AutonomyAct         Autonomy = "act"
	AutonomyActIfAgreed Autonomy = "act_if_agreed"
	AutonomyAsk         Autonomy = "ask"
	AutonomyHandoff     Autonomy = "handoff"
)

// Autonomies lists every Autonomy from most to least autonomous.
var Autonomies = []Autonomy{AutonomyAct, AutonomyActIfAgreed, AutonomyAsk, AutonomyHandoff}

// Valid reports whether a is one of Autonomies.
func (a Autonomy) Valid() bool { return slices.Contains(Autonomies, a) }

// FilesystemMode is the access a filesystem intent asks for.
type FilesystemMode string

// The filesystem modes; an absent mode means read-only.
const (
	ModeReadOnly  FilesystemMode = "read_only"
	ModeReadWrite FilesystemMode = "read_write"
)

// Valid reports whether m is a known mode.
func (m FilesystemMode) Valid() bool { return m == ModeReadOnly || m == ModeReadWrite }
