package server

import "github.com/redcell/redcell/admission"

// Every limiter command is parse, admit, decide, reply: it parses its
// arguments, asks the server's gate whether the decision may be made
// (admit), makes it (dry under a conditional refusal), records the change it
// stored or refuses it (stored), then replies. The gate is the one the rate
// limit service asks too (Server.Gate).

// admit asks the gate whether a decision on key charging quantity (0: a
// peek) may be made (admission.Gate.Admit). An outright refusal is answered
// here, and ok is false. Otherwise cond is admission.Admitted, or a
// conditional refusal under which the caller decides dry, storing nothing,
// and refuses the decision if it would have stored (stored).
//
// It is small enough to be inlined into the hot path, where the gate admits
// with a comparison, a load and a test; refused answers the rest.
func (c *client) admit(key []byte, quantity int64) (cond admission.Refusal, ok bool) {
	if c.srv.gate.Open(len(key)) {
		return admission.Admitted, true
	}
	return c.admitSlow(key, quantity)
}

// admitSlow is admit when the gate is not open: an outright refusal is
// answered, and ok is false; a conditional one is returned for the caller
// to decide dry.
//
//go:noinline
func (c *client) admitSlow(key []byte, quantity int64) (cond admission.Refusal, ok bool) {
	r := c.srv.gate.Admit(len(key), quantity)
	if r == admission.Admitted || r.Conditional() {
		return r, true
	}
	c.writeError(c.srv.refusalError(r, len(key)))
	return r, false
}

// stored is called for a decision that stored its key, or under a
// conditional refusal would have: it answers the refusal and reports false,
// or records the change (changed) and reports true.
func (c *client) stored(cond admission.Refusal, key []byte) bool {
	if cond != admission.Admitted {
		c.writeError(c.srv.refusalError(cond, len(key)))
		return false
	}
	c.changed(key)
	return true
}

// decide is admit, decide, then stored, for a limiter whose store call
// takes a dry flag (CL.RESERVE, CL.WINDOW, CL.COUNT): run makes the
// decision on key, dry under a conditional refusal, and reports whether it
// stored (or would have); its error is answered as errReply words it. It
// reports whether the decision stands, answered by the caller; false: it
// was answered here (a refusal, an error).
func (c *client) decide(key []byte, quantity int64, errReply func(error) replyError, run func(dry bool) (stored bool, err error)) bool {
	cond, ok := c.admit(key, quantity)
	if !ok {
		return false
	}
	stored, err := run(cond != admission.Admitted)
	if err != nil {
		c.writeError(errReply(err))
		return false
	}
	return !stored || c.stored(cond, key)
}

// writeAdmitted is admit for a change that is not a decision (DEL,
// FLUSHALL): it answers a refusal, conditional or not, and reports false.
func (c *client) writeAdmitted() bool {
	if r := c.srv.gate.Writes(); r != admission.Admitted {
		c.writeError(c.srv.refusalError(r, 0))
		return false
	}
	return true
}
