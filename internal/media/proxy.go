package media

import (
	"context"
	"io"
)

// Head is what a Copy says about a file before its bytes: its MIME type as Meta gave it, and
// its size (0 when Meta did not say).
type Head struct {
	MIMEType string
	Size     int64
}

// Copy streams the file of mediaID, fetched with token, into w: the console's view of a
// message's image. head is called once, after the lookup and before the first byte, so a
// caller can set its headers; nothing is kept. Files over the size cap are refused (ErrTooLarge)
// before the download. Errors are *Error, classified like Fetch's.
func (f *Fetcher) Copy(ctx context.Context, token, mediaID string, w io.Writer, head func(Head)) (int64, error) {
	g := f.graph.WithToken(token)
	info, err := g.MediaInfo(ctx, mediaID)
	if err != nil {
		return 0, graphError("lookup", err)
	}
	if err := f.checkSize(info); err != nil {
		return 0, err
	}
	if err := f.checkURL(info); err != nil {
		return 0, err
	}
	head(Head{MIMEType: info.MIMEType, Size: info.FileSize})
	n, err := g.DownloadMedia(ctx, info.URL, w, f.max)
	if err != nil {
		return n, graphError("download", err)
	}
	return n, nil
}
