#include <ft2build.h>
#include FT_FREETYPE_H
/* FT_LOAD_RENDER is a macro of a long: given here with FT_Load_Char's flag type. */
static inline FT_Int32 marquee_ft_load_render(void) { return FT_LOAD_RENDER; }
