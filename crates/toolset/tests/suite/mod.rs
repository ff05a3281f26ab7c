mod toolsets;
