package graph

// Version is the Graph API version wapipe is written against: every default URL below is built
// from it, so that moving to a new version is one edit (and the fakes answer any version).
const Version = "v24.0"

// DefaultBaseURL is the Graph API base URL services and the CLI use when GRAPH_API_BASE_URL is
// unset.
const DefaultBaseURL = "https://graph.facebook.com/" + Version

// DefaultDialogURL is Meta's OAuth dialog, where Embedded Signup starts, at Version.
const DefaultDialogURL = "https://www.facebook.com/" + Version + "/dialog/oauth"
