// The few things Swift cannot import from the C libraries: function-like macros and macros whose
// value is a struct or a cast. Every function here only forwards; the names carry an `mq_` prefix.
#ifndef MARQUEE_CSHIM_H
#define MARQUEE_CSHIM_H
#include <stdint.h>

/// AVERROR(e): FFmpeg's negative error code for a POSIX errno.
int mq_averror(int posix_errno);
/// AVERROR_EOF: the decoder or demuxer has no more data.
int mq_averror_eof(void);
/// AVERROR_EXIT: stop at once (an interrupt callback or an I/O callback asked).
int mq_averror_exit(void);
/// AVERROR_DECODER_NOT_FOUND: no decoder for a stream.
int mq_averror_decoder_not_found(void);
/// AV_NOPTS_VALUE: "no timestamp".
int64_t mq_av_nopts_value(void);

struct AVStream;
/// The rotation of the stream's display matrix (AV_PKT_DATA_DISPLAYMATRIX side data) in degrees
/// counter-clockwise, as av_display_rotation_get gives it; 0 when the stream has none. Hides the
/// side-data API that changed in FFmpeg 6.1.
double mq_stream_display_rotation(const struct AVStream *stream);

/// mallopt(M_ARENA_MAX, count): at most `count` malloc arenas from now on (glibc; malloc.h is not
/// in Swift's Glibc module). Returns 1 on success, 0 when refused.
int mq_limit_malloc_arenas(int count);

/// mallopt(M_MMAP_THRESHOLD, bytes): blocks of at least `bytes` are mapped on their own and given
/// back to the system when freed; setting it turns off glibc's raising of the threshold as such
/// blocks are freed. Returns 1 on success, 0 when refused.
int mq_malloc_mmap_threshold(int bytes);

/// malloc_trim(0): gives the free memory at the top of the heap and in free pages of every arena
/// back to the system. Returns 1 when some was released.
int mq_malloc_trim(void);

/// Receives FFmpeg's log messages: the AV_LOG_* level, the component that logged (its AVClass's
/// item name, e.g. "h264"; NULL when none) and one whole line without its newline.
typedef void (*mq_log_sink)(int level, const char *component, const char *line);

/// Routes FFmpeg's log through `sink` (av_log_set_callback with a callback that formats each
/// message with av_log_format_line2 and joins pieces into whole lines per thread); NULL routes it
/// back to FFmpeg's default (standard error). Messages above av_log_get_level() are not formatted.
void mq_av_log_route(mq_log_sink sink);

/// Messages logged by this thread from now on count as no more severe than `level` (an AV_LOG_*
/// value; -1: as logged). Returns the previous setting, to be put back.
int mq_av_log_demote(int level);

#endif
