#!/usr/bin/python3
# A small GTK 3 app for the tests of internal/desktop: a label that counts the presses of
# its button, a text field, a check box (which, checked, adds a button), a password field and
# a delete button. It has no manifest: capgate
# derives its capabilities from its accessibility tree.
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk

# The desktop id the app is known by: the accessible name of its application.
GLib.set_prgname("org.example.Counter")

win = Gtk.Window(title="Counter")
win.set_wmclass("counter", "Counter")
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
label = Gtk.Label(label="count: 0")
entry = Gtk.Entry()
entry.set_name("note")
button = Gtk.Button(label="Increment")
n = [0]
def inc(_):
    n[0] += 1
    label.set_text("count: %d" % n[0])
button.connect("clicked", inc)
check = Gtk.CheckButton(label="Enabled")
secret = Gtk.Entry()
secret.set_visibility(False)
secret.get_accessible().set_name("Password")
entry.get_accessible().set_name("Note")
label.get_accessible().set_name("Count")
delete = Gtk.Button(label="Delete all")
box.add(label); box.add(entry); box.add(button); box.add(check); box.add(secret); box.add(delete)

# Checking "Enabled" adds a button: the tree changes shape, as an app's window does when it
# shows more.
def toggled(_):
    if check.get_active() and not extra:
        extra.append(Gtk.Button(label="Extra"))
        box.add(extra[0])
        extra[0].show()
extra = []
check.connect("toggled", toggled)
win.add(box)
win.connect("destroy", Gtk.main_quit)
win.show_all()
Gtk.main()
