from django.http import HttpResponseRedirect

from todolist.todo.models import Item


def item_action(request, action, pk):
    if action == "done":
        item = Item.objects.get(pk=pk)
        item.done = True
        item.save()
    elif action == "onhold":
        item = Item.objects.get(pk=pk)
        item.onhold = not item.onhold
        item.save()
    elif action == "delete":
        Item.objects.filter(pk=pk).delete()

    return HttpResponseRedirect("/admin/todo/item/")
