// The few things Swift cannot import from the C libraries: function-like macros and macros whose
// value is a struct or a cast. Every function here only forwards; the names carry an `mq_` prefix.
#ifndef MARQUEE_CSHIM_H
#define MARQUEE_CSHIM_H
#include <stdint.h>

/// AVERROR(e): FFmpeg's negative error code for a POSIX errno.
int mq_averror(int posix_errno);
/// AVERROR_EOF: the decoder or demuxer has no more data.
int mq_averror_eof(void);
/// AVERROR_DECODER_NOT_FOUND: no decoder for a stream.
int mq_averror_decoder_not_found(void);
/// AV_NOPTS_VALUE: "no timestamp".
int64_t mq_av_nopts_value(void);

#endif
