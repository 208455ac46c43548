package encoding

type profile struct{}

func (e *Encoder) statistics(col column) ([]byte, error)   { return nil, nil }
func (e *Encoder) fixed(col column) (*candidate, error)    { return nil, ErrUnsupported }
func (e *Encoder) adaptive(col column) (*candidate, error) { return nil, ErrUnsupported }
