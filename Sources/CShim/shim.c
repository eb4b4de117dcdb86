#include "CShim.h"
#include <libavutil/error.h>
#include <libavutil/avutil.h>

int mq_averror(int posix_errno) { return AVERROR(posix_errno); }
int mq_averror_eof(void) { return AVERROR_EOF; }
int64_t mq_av_nopts_value(void) { return AV_NOPTS_VALUE; }
int mq_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
