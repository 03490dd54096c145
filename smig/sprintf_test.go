package smig

import "fmt"

var sprintf = fmt.Sprintf
