package server

import "fmt"

// SettingError is a configuration that cannot work. It names the settings
// at fault by their Config field, so the server speaks of settings and its
// front end of its own names for them: the CLI shows its flags (Describe).
type SettingError struct {
	// Settings are the Config fields at fault, in the order the message
	// names them.
	Settings []string
	// format formats the message: the settings' names first (%[1]s …),
	// then args.
	format string
	args   []any
	// err is the cause, if any.
	err error
}

// settingError returns the error of format over settings and args.
func settingError(settings []string, format string, args ...any) *SettingError {
	e := &SettingError{Settings: settings, format: format, args: args}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.err = err
		}
	}
	return e
}

// Describe is the message with each setting named by name(field).
func (e *SettingError) Describe(name func(field string) string) string {
	vals := make([]any, 0, len(e.Settings)+len(e.args))
	for _, s := range e.Settings {
		vals = append(vals, name(s))
	}
	return fmt.Sprintf(e.format, append(vals, e.args...)...)
}

// Error names the settings by their Config fields.
func (e *SettingError) Error() string {
	return e.Describe(func(field string) string { return field })
}

// Unwrap returns the cause.
func (e *SettingError) Unwrap() error { return e.err }
