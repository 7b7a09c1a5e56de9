package runtime

import "strings"

// DefaultPath is the PATH container engines give a container whose image
// sets none (Docker's and containerd's default for Linux).
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// PathWith is the colon-separated path list with dir added at its end
// when it is not already one of its elements: an agent's PATH is its
// image's, with the directory of the mounted scion binary after the
// image's own directories, so that the image's tools win over a binary of
// the same name.
func PathWith(path, dir string) string {
	if dir == "" {
		return path
	}
	for _, e := range strings.Split(path, ":") {
		if strings.TrimSuffix(e, "/") == strings.TrimSuffix(dir, "/") {
			return path
		}
	}
	if path == "" {
		return dir
	}
	return path + ":" + dir
}
