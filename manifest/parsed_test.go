package manifest

import "testing"

func TestParsedAccessors(t *testing.T) {
	m := &Manifest{AppID: "org.example.notes", Version: "1.2.0-rc.1"}
	if got := m.ParsedAppID(); got.String() != "org.example.notes" || !got.IsValid() {
		t.Errorf("ParsedAppID = %q", got)
	}
	if got := m.ParsedVersion(); got.String() != "1.2.0-rc.1" || !got.IsValid() {
		t.Errorf("ParsedVersion = %q", got)
	}
	bad := &Manifest{AppID: "Notes", Version: "1.2"}
	if bad.ParsedAppID().IsValid() || bad.ParsedVersion().IsValid() {
		t.Error("a bad app id or version parsed")
	}

	tests := []struct {
		name         string
		c            Capability
		id, perm     string
		idOK, permOK bool
	}{
		{"declared", Capability{ID: "notes.org.example.notes.read", Permission: "notes.read"},
			"notes.org.example.notes.read", "notes.read", true, true},
		{"defaulted", Capability{ID: "notes.org.example.notes.read"},
			"notes.org.example.notes.read", "notes.org.example.notes.read", true, true},
		{"bad id", Capability{ID: "Notes.read"}, "", "", false, false},
		{"bad permission", Capability{ID: "notes.org.example.notes.read", Permission: "notes"},
			"notes.org.example.notes.read", "", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, p := tt.c.ParsedID(), tt.c.ParsedPermission()
			if id.String() != tt.id || id.IsValid() != tt.idOK {
				t.Errorf("ParsedID = %q (valid %v), want %q (%v)", id, id.IsValid(), tt.id, tt.idOK)
			}
			if p.String() != tt.perm || p.IsValid() != tt.permOK {
				t.Errorf("ParsedPermission = %q (valid %v), want %q (%v)", p, p.IsValid(), tt.perm, tt.permOK)
			}
		})
	}
}

// TestCapabilityIDPermission: every capability id is a permission, as the default of a
// capability's permission needs.
func TestCapabilityIDPermission(t *testing.T) {
	for _, s := range []string{"notes.org.example.notes.read", "tool.org.capgate.tool.fs.list_dir", "a.b.c.d"} {
		id, err := ParseCapabilityID(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		want, err := ParsePermission(s)
		if err != nil {
			t.Fatalf("%s is no permission: %v", s, err)
		}
		if id.Permission() != want {
			t.Errorf("%s: Permission() = %q, want %q", s, id.Permission(), want)
		}
	}
	if (CapabilityID{}).Permission().IsValid() {
		t.Error("the zero CapabilityID gave a valid permission")
	}
}

func TestParsedAccessorsAllocateNothing(t *testing.T) {
	c := &Capability{ID: "notes.org.example.notes.read"}
	m := &Manifest{AppID: "org.example.notes"}
	if n := testing.AllocsPerRun(100, func() {
		_, _, _ = c.ParsedID(), c.ParsedPermission(), m.ParsedAppID()
	}); n != 0 {
		t.Errorf("%v allocations a call", n)
	}
}

func TestMustParse(t *testing.T) {
	if MustParseAppID("org.example.notes").String() != "org.example.notes" ||
		MustParseCapabilityID("notes.org.example.notes.read").Action() != "read" ||
		MustParsePermission("notes.read").String() != "notes.read" {
		t.Error("a MustParse function changed its input")
	}
	for name, f := range map[string]func(){
		"app id":        func() { MustParseAppID("Notes") },
		"capability id": func() { MustParseCapabilityID("notes.read") },
		"permission":    func() { MustParsePermission("notes") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
